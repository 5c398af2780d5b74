#!/usr/bin/python3
"""Every command's help lists exactly the options the command takes (in
`make test`): for each command of `stepwise --help`, the options its help
lists (the lines that start with an option) against the options its source
declares, in an option table (ref/cli/options.h: {"name", VALUE, OPTION_...},
the shared tables of ref/cli/option_groups.c it names, directly or by a
group macro of ref/cli/options.h (CLI_MODEL_GROUP), expanded, make-model's
from the table of model fields, ref/config_table.h) or a getopt
table ({"name", required_argument | no_argument, ...}, the shared groups'
macros of ref/cli/common.h expanded). An option the command
takes that its help leaves out, or one its help lists that it does not
take, fails. And each listed option is accepted: given a value, the
command never calls it unknown.

    /usr/bin/python3 tests/cli_help_check.py build/stepwise
"""
import os
import re
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_util import Checks, TIMEOUT  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.path.join(HERE, "..", "ref", "cli")
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/stepwise")
GETOPT = re.compile(r'\{\s*"([a-z0-9-]+)",\s*(?:required_argument|no_argument|optional_argument)')
TABLE = re.compile(r'\{\s*"([a-z0-9-]+)",\s*(?:"[^"]*"|NULL),\s*OPTION_')
LISTED = re.compile(r"^ {2,}(?:-\w, )?--([a-z0-9-]+)", re.M)


def macros():
    """{MACRO: option names} of the shared groups' getopt macros in common.h."""
    text = open(os.path.join(CLI, "common.h")).read()
    out = {}
    for m in re.finditer(r"#define (\w+_LONG_OPTIONS)((?:.*\\\n)+.*\n)", text):
        out[m.group(1)] = set(GETOPT.findall(m.group(2))) | set(
            re.findall(r'"([a-z0-9-]+)", (?:required_argument|no_argument|optional_argument)',
                       m.group(2).replace("\\\n", "")))
    groups = open(os.path.join(CLI, "option_groups.c")).read()  # the shared option tables
    for m in re.finditer(r"const CliOption (CLI_\w+)\[\] = \{(.*?)CLI_OPTIONS_END\}", groups, re.S):
        out[m.group(1)] = set(TABLE.findall(m.group(2)))
    # options.h's group macros (CLI_MODEL_GROUP(...): {.options = CLI_MODEL_OPTIONS, ...}) name a table
    header = open(os.path.join(CLI, "options.h")).read()
    for m in re.finditer(r"#define (CLI_\w+_GROUP)\([^)]*\)\s*\\\n\s*\{\s*\.options = (CLI_\w+),", header):
        out[m.group(1)] = out[m.group(2)]
    return out


def table_options():
    """make-model's options from the table of model fields (ref/config_table.h): each X(...)
    entry's eleventh argument, "" for none."""
    text = open(os.path.join(HERE, "..", "ref", "config_table.h")).read()
    text = text.split("#define CONFIG_FIELDS(X)", 1)[1].replace("\\\n", " ")
    names = set()
    for entry in re.finditer(r"\bX\(", text):
        args, depth, cur, i, quoted = [], 1, "", entry.end(), False
        while depth > 0:  # the arguments, split at commas outside strings and parentheses
            ch = text[i]
            if ch == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted and ch in "()":
                depth += 1 if ch == "(" else -1
            if depth > 0 and not quoted and ch == "," and depth == 1:
                args.append(cur.strip())
                cur = ""
            elif depth > 0:
                cur += ch
            i += 1
        args.append(cur.strip())
        option = args[10].strip('"')
        if option:
            names.add(option)
    return names


def declared(source, shared):
    text = open(source).read()
    names = set(GETOPT.findall(text)) | set(TABLE.findall(text)) | {"help"}
    if "make_model_options" in text:  # the options the table of model fields declares
        names |= table_options()
    for macro, group in shared.items():
        if re.search(r"\b%s\b" % macro, text):
            names |= group
    return names


def check_wrapped(check):
    """make-model's --arch and --preset helps, made from the family and preset tables and broken
    by cli_help_wrap at 64 columns, are the greedy wrap of their words (Python's textwrap, words
    never split): each line as full as the next word allows, none wider than 64."""
    lines = subprocess.run([BIN, "make-model", "--help"], capture_output=True, text=True,
                           timeout=TIMEOUT).stdout.split("\n")
    for option in ("arch", "preset"):
        head = [re.match(r"(  --%s \w+ +)\S" % option, line) for line in lines]
        at = next((i for i, m in enumerate(head) if m), None)
        if at is None:
            check(False, "make-model --help lists --%s" % option)
            continue
        column = len(head[at].group(1))
        got = [lines[at][column:]]
        for line in lines[at + 1:]:  # its lines under the first, at its column
            if not line.startswith(" " * column) or line[column:column + 1] in ("", " "):
                break
            got.append(line[column:])
        want = textwrap.wrap(" ".join(got), 64, break_long_words=False, break_on_hyphens=False)
        check(got == want, "make-model --help: --%s's %d lines are its words wrapped at 64 columns%s" % (
            option, len(got), "" if got == want else " (%r, want %r)" % (got, want)))


def main():
    shared = macros()
    listed_commands = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    block = listed_commands.split("commands:\n")[1].split("\n\n")[0]
    commands = re.findall(r"^  ([a-z][a-z-]+) ", block, re.M)
    check = Checks()
    check_wrapped(check)
    for command in commands:
        source = os.path.join(CLI, command.replace("-", "_") + ".c")
        text = subprocess.run([BIN, command, "--help"], capture_output=True, text=True, timeout=TIMEOUT).stdout
        listed = set()
        options_part = text.split("\n\n", 1)[1] if "\n\n" in text else text  # past the usage lines
        for line in options_part.splitlines():  # an option line: the names before its text
            if LISTED.match(line):
                listed |= set(re.findall(r"--([a-z0-9-]+)", re.split(r"\s{2,}", line.strip())[0]))
        takes = declared(source, shared)
        unknown = []
        for name in sorted(listed - {"help"}):
            # in a folder of its own: "--trace 1" (or --out 1) writes a file named 1
            with tempfile.TemporaryDirectory() as scratch:
                r = subprocess.run([os.path.abspath(BIN), command, "--" + name, "1"], capture_output=True,
                                   text=True, stdin=subprocess.DEVNULL, timeout=60, cwd=scratch)
            if "unknown option" in r.stderr:
                unknown.append(name)
        ok = listed == takes and not unknown
        check(ok, "%s: its help lists the %d options it takes%s" % (
            command, len(takes), "" if ok else "; takes but leaves out: %s; lists but does not take: %s; "
            "refused as unknown: %s" % (sorted(takes - listed), sorted(listed - takes), unknown)))
    return check.summary("cli help")


if __name__ == "__main__":
    sys.exit(main())
