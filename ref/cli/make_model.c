/* cli/make_model.c: `stepwise make-model`, a random-weight checkpoint of any
 * shape, for shapes the real models do not have (MHA, GQA, MQA, untied,
 * the 15M benchmark shape). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ref/cli/commands.h"
#include "ref/formats/checkpoint.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/presets.h"
#include "ref/cli/folder_whole.h"
#include "ref/cli/signals.h"
#include "ref/util/file_util.h"
#include "ref/formats/hf_write.h"
#include "ref/text/tokenizer_json.h"

static const char MAKE_MODEL_USAGE[] =
    "usage: stepwise make-model --dim D --hidden H --layers L --heads N [--kv-heads M]\n"
    "                           --vocab V --seq-len S [--seed X] [--untied] --out FILE\n"
    "\n"
    "Write a llama2.c checkpoint with seeded random weights (norms 1, matrices\n"
    "uniform in +-1/sqrt(fan_in)). The same seed always gives the same bytes.\n"
    "--kv-heads M < N shares each KV head among N/M query heads: M = N is MHA,\n"
    "1 < M < N is GQA, M = 1 is MQA. --untied stores a classifier of its own.\n"
    "Defaults: --kv-heads N, --seed 42.\n";

/* The help after the options: the presets' sources, and an example. */
static const char MAKE_MODEL_AFTER[] =
    "\n"
    "A folder is written tensor by tensor, each drawn as it is written: no shape\n"
    "needs its weights in memory (but GPT-2's, whose Conv1D tensors are written\n"
    "transposed from the weights in memory).\n"
    "\n"
    "the 15M benchmark shape:\n"
    "  stepwise make-model --dim 288 --hidden 768 --layers 6 --heads 6 --vocab 32000 \\\n"
    "      --seq-len 256 --out build/m15.bin\n";

/* The options a parse function of its own reads (the rest are numbers
 * and names the table sets). */
enum { OPT_FORMAT, OPT_ARCH, OPT_DTYPE, OPT_DENSE_LAYERS, OPT_PRESET };

/* The folder options (--format hf and what goes with it). */
typedef struct {
    bool hf;
    bool format_given;    /* --format was on the command line */
    const Family *family; /* --arch */
    SafetensorsDtype dtype;
    int shards;
    const char *tokenizer_from; /* a folder with a tokenizer.json to copy in */
} FolderOptions;

/* "gemma2 gemma3 mistral" as "gemma2, gemma3 or mistral". */
static void families_text(const char *families, char *buf, size_t size) {
    buf[0] = '\0';
    size_t at = 0;
    for (const char *p = families; *p != '\0' && at < size;) {
        size_t len = strcspn(p, " ");
        const char *next = p[len] == ' ' ? p + len + 1 : p + len;
        const char *sep = at == 0 ? "" : *next == '\0' ? " or " : ", ";
        at += (size_t)snprintf(buf + at, size - at, "%s%.*s", sep, (int)len, p);
        p = next;
    }
}

/* A field given on the command line must be one the family holds, and
 * none when a llama2.c checkpoint is made of no preset (one of a preset
 * must still be config_is_llama2c's, below). */
static bool fields_fit(const Config *c, bool checkpoint, const Family *family, StepError *err) {
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->option[0] == '\0' || !model_field_marked(f) || !model_field_given(c, f)) continue;
        if (checkpoint)
            return step_fail(err,
                             "make-model: --%s needs --format hf (a llama2.c checkpoint "
                             "holds the shape alone)",
                             f->option);
        if (config_field_in_family(f, family->name)) continue;
        char families[128];
        families_text(f->families, families, sizeof families);
        return step_fail(err, "make-model: --%s needs --arch %s", f->option, families);
    }
    return true;
}

/* The fields still not given: the family's default (family.h: Gemma 2's
 * soft-caps 50 and 30 and every other layer sliding, Gemma 3's five sliding
 * layers in six at a local RoPE base of 10000, an MoE's two experts a token
 * (at most E), every layer sparse and the k weights renormalised), else 0.
 * The expert width (--hidden) is set apart: it is not a constant. */
static void family_defaults(Config *c, const Family *family) {
    family_defaults_apply(family, FAMILY_IN_MAKE, c, model_field_given);
    model_fields_settle(c);
}

/* DeepSeek-V2's numbers not given: the value as wide as the unturned part
 * of a head (qk_nope_head_dim), the experts --hidden wide, the weights
 * scaled by 1; and what it needs: MLA's widths, a dense MLP only in the
 * first layers. */
static bool deepseek2_settle(Config *c, bool moe, StepError *err) {
    if (c->kv_lora_rank <= 0 || c->qk_rope_head_dim <= 0 || c->head_dim <= 0)
        return step_fail(err, "make-model: --arch deepseek2 needs --head-dim (qk_nope + qk_rope), "
                              "--kv-lora-rank and --qk-rope-dim");
    if (c->v_head_dim <= 0) c->v_head_dim = c->head_dim - c->qk_rope_head_dim;
    if (!moe) c->n_experts_used = 0, c->expert_norm_topk = false, c->moe_step = 0;
    if (moe && c->expert_hidden_dim <= 0) c->expert_hidden_dim = c->hidden_dim;
    if (moe && c->routed_scaling_factor <= 0) c->routed_scaling_factor = 1.0f;
    for (int i = 0; i < c->n_dense_layers; i++)
        if (c->dense_layers[i] != i)
            return step_fail(err, "make-model: DeepSeek-V2's dense layers are its first ones "
                                  "(--dense-layers 0,1,..)");
    return true;
}

/* The list of dense layers "1,4,7" (--dense-layers) into c. */
static bool dense_layers_parse(const char *arg, Config *c, StepError *err) {
    c->n_dense_layers = 0;
    for (const char *p = arg; *p != '\0';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1 << 20 || (*end != ',' && *end != '\0') ||
            c->n_dense_layers == CONFIG_MAX_DENSE_LAYERS)
            return step_fail(err,
                             "make-model: --dense-layers is a list of at most %d layer indices "
                             "such as 0,3, not '%.40s'",
                             CONFIG_MAX_DENSE_LAYERS, arg);
        c->dense_layers[c->n_dense_layers++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return true;
}

/* What the command line gives: the shape, the folder's options and the
 * checkpoint's. */
typedef struct {
    Config c;
    FolderOptions folder;
    int seed;
    bool untied, arch_given, no_norm_topk;
    const char *out;
    const ModelPreset *preset;
} MakeModelArgs;

/* The options the table cannot set alone: the names (--format, --arch,
 * --dtype, --preset) and the list of dense layers. */
static bool parse_option(const CliOption *o, const char *value, void *dest, StepError *err) {
    MakeModelArgs *a = dest;
    FolderOptions *f = &a->folder;
    switch (o->id) {
        case OPT_FORMAT:
            f->hf = value[0] == 'h';
            f->format_given = true;
            return strcmp(value, "hf") == 0 || strcmp(value, "llama2c") == 0 ||
                   step_fail(err, "make-model: --format is llama2c or hf, not '%s'", value);
        case OPT_ARCH: {
            a->arch_given = true;
            const Family *family = family_find(value); /* kept as it was when unknown */
            if (family != NULL) return f->family = family, true;
            char names[256];
            family_names_text(names, sizeof names, false, NULL);
            return step_fail(err, "make-model: --arch is %s, not '%s'", names, value);
        }
        case OPT_DTYPE:
            f->dtype = strcmp(value, "f16") == 0    ? ST_F16
                       : strcmp(value, "bf16") == 0 ? ST_BF16
                                                    : ST_F32;
            return f->dtype != ST_F32 || strcmp(value, "f32") == 0 ||
                   step_fail(err, "make-model: --dtype is f32, f16 or bf16, not '%s'", value);
        case OPT_DENSE_LAYERS:
            return dense_layers_parse(value, &a->c, err);
        default: /* OPT_PRESET */
            return (a->preset = model_preset_find(value, err)) != NULL;
    }
}

/* The options the table does not declare: the seed, the classifier, where
 * to write, the folder's, and two of the experts' (a list, and a flag). */
static const CliOption OWN_OPTIONS[] = {
    {"seed", "X", OPTION_INT, offsetof(MakeModelArgs, seed), -(1L << 31) + 1, (1L << 31) - 1,
     .help = "the random weights' seed (default 42)"},
    {"untied", NULL, OPTION_FLAG, offsetof(MakeModelArgs, untied),
     .help = "a classifier of its own (default: tied to the embedding)"},
    {"out", "FILE", OPTION_TEXT, offsetof(MakeModelArgs, out), .required = true, .path = PATH_OUT,
     .help = "where to write (written whole or not at all)"},
    CLI_OPTIONS_END};

static const CliOption FOLDER_OPTIONS[] = {
    {"format", "hf", OPTION_CUSTOM, .parse = parse_option, .id = OPT_FORMAT,
     .help = "write OUT as a folder: config.json and safetensors"},
    {"arch", "A", OPTION_CUSTOM, .parse = parse_option,
     .id = OPT_ARCH}, /* help: the table's (family_names_text) */
    {"dtype", "T", OPTION_CUSTOM, .parse = parse_option, .id = OPT_DTYPE,
     .help = "f32 (default), f16 or bf16 (rounded to nearest even)"},
    {"shards", "N", OPTION_INT, offsetof(MakeModelArgs, folder.shards), 1, 64,
     .help = "N safetensors files and their index (default 1)"},
    {"tokenizer-from", "DIR", OPTION_TEXT, offsetof(MakeModelArgs, folder.tokenizer_from),
     .path = PATH_IN,
     .help = "copy DIR's tokenizer.json (and tokenizer_config.json) in;\n"
             "its ids must be below --vocab"},
    CLI_OPTIONS_END};

static const CliOption MOE_OWN_OPTIONS[] = {
    {"dense-layers", "L,..", OPTION_CUSTOM, .parse = parse_option, .id = OPT_DENSE_LAYERS,
     .help = "layers whose MLP stays dense, --hidden wide (--arch qwen3moe;\n"
             "deepseek2: the first ones, 0,1,..)"},
    {"no-norm-topk", NULL, OPTION_FLAG, offsetof(MakeModelArgs, no_norm_topk),
     .help = "the k weights not renormalised (qwen3moe's norm_topk_prob\nfalse)"},
    CLI_OPTIONS_END};

static const CliOption PRESET_OPTIONS[] = {
    {"preset", "P", OPTION_CUSTOM, .parse = parse_option, .id = OPT_PRESET}, /* help: presets' */
    CLI_OPTIONS_END};

/* The help's heading for each group of the table's options (the shape's
 * are the command's own). */
static const char *const GROUP_HEADINGS[] = {[CF_ATTENTION] =
                                                 "Attention (a folder's; docs/families.md):",
                                             [CF_ROPE] = "RoPE:",
                                             [CF_NORM] = "Norms:",
                                             [CF_MLP] = "The MLP and the logits:",
                                             [CF_MOE] = "A mixture of experts (docs/moe.md):",
                                             [CF_FILES] = "The files:"};
#define N_GROUPS (CF_FILES + 1)

/* make-model's options: the table's (config_table.h), one group a
 * ConfigGroup, each field's help followed by the families that hold it;
 * and the command's own. Made at run time, as the table is data. */
typedef struct {
    CliOption own[CONFIG_FIELD_COUNT + 4];
    CliOption folder[8], preset[2]; /* FOLDER_OPTIONS and PRESET_OPTIONS, their help made */
    char arch_help[640], preset_help[1024];
    CliOption fields[N_GROUPS][CONFIG_FIELD_COUNT + 4];
    char help[CONFIG_FIELD_COUNT][320];
    CliOptionGroup groups[N_GROUPS + 3];
    CliCommandOptions command;
} MakeModelOptions;

/* The option of field f, its help written into help. */
static CliOption field_option(const ConfigField *f, size_t base, char *help, size_t size) {
    char families[128] = "";
    families_text(f->families, families, sizeof families);
    snprintf(help, size, "%s%s%s%s", f->help, families[0] != '\0' ? "\n(--arch " : "", families,
             families[0] != '\0' ? ")" : "");
    /* a size takes any int (config_validate names what it refuses); a number
     * whose 0 means "none" takes 0, one whose 0 stands for a value (the RoPE
     * base's 10000) starts at its least */
    bool shape = f->group == CF_SHAPE;
    long least = f->zero != 0 ? (long)ceil(f->min) : 0;
    return (CliOption){.name = f->option,
                       .value = f->type == CF_TYPE_BOOL  ? NULL
                                : f->type == CF_TYPE_INT ? "N"
                                                         : "X",
                       .kind = f->type == CF_TYPE_BOOL  ? OPTION_FLAG
                               : f->type == CF_TYPE_INT ? OPTION_INT
                                                        : OPTION_FLOAT,
                       .offset = base + f->offset,
                       .min = shape ? -(1L << 31) + 1 : least,
                       .max = shape ? (1L << 31) - 1 : (long)fmin(f->max, 1e9),
                       .help = help};
}

/* A copy of table, option `name`'s help set to help. */
static void options_with_help(CliOption *out, size_t n, const CliOption *table, const char *name,
                              const char *help) {
    size_t i = 0;
    for (; table[i].name != NULL && i + 1 < n; i++) {
        out[i] = table[i];
        if (strcmp(table[i].name, name) == 0) out[i].help = help;
    }
    out[i] = (CliOption)CLI_OPTIONS_END;
}

static void make_model_options(MakeModelOptions *o, const Family *default_family) {
    int n_own = 0, n_in[N_GROUPS] = {0}, n_groups = 0;
    for (int i = 0; i < CONFIG_FIELD_COUNT; i++) {
        const ConfigField *f = &CONFIG_FIELD_LIST[i];
        if (f->option[0] == '\0') continue;
        bool shape = f->group == CF_SHAPE;
        CliOption opt =
            field_option(f, shape ? offsetof(MakeModelArgs, c) : 0, o->help[i], sizeof o->help[i]);
        if (shape)
            o->own[n_own++] = opt;
        else
            o->fields[f->group][n_in[f->group]++] = opt;
    }
    for (const CliOption *own = OWN_OPTIONS; own->name != NULL; own++) o->own[n_own++] = *own;
    o->own[n_own] = (CliOption)CLI_OPTIONS_END;
    family_names_text(o->arch_help, sizeof o->arch_help, true, default_family);
    cli_help_wrap(o->arch_help, 64);
    options_with_help(o->folder, sizeof o->folder / sizeof o->folder[0], FOLDER_OPTIONS, "arch",
                      o->arch_help);
    model_presets_text(o->preset_help, sizeof o->preset_help, true);
    cli_help_wrap(o->preset_help, 64);
    options_with_help(o->preset, sizeof o->preset / sizeof o->preset[0], PRESET_OPTIONS, "preset",
                      o->preset_help);
    o->groups[n_groups++] = (CliOptionGroup){.options = o->folder,
                                             .heading = "A Hugging Face model directory instead "
                                                        "(docs/hf-models.md):"};
    for (int g = 0; g < N_GROUPS; g++) {
        o->fields[g][n_in[g]] = (CliOption)CLI_OPTIONS_END;
        if (n_in[g] > 0)
            o->groups[n_groups++] = (CliOptionGroup){.options = o->fields[g],
                                                     .base = offsetof(MakeModelArgs, c),
                                                     .heading = GROUP_HEADINGS[g]};
        if (g == CF_MOE) /* the command's own, into the arguments: no heading of their own */
            o->groups[n_groups++] = (CliOptionGroup){.options = MOE_OWN_OPTIONS};
    }
    o->groups[n_groups++] = (CliOptionGroup){
        .options = o->preset,
        .heading = "A real model's shape, from its published config.json (random weights; a\n"
                   "folder unless --format llama2c, which only tinyllama-1.1b fits; options\n"
                   "given beside it win, --seq-len 2048 say):"};
    o->groups[n_groups] = (CliOptionGroup){0};
    o->command = (CliCommandOptions){.command = "make-model",
                                     .usage = MAKE_MODEL_USAGE,
                                     .options = o->own,
                                     .groups = o->groups,
                                     .after = MAKE_MODEL_AFTER};
}

/* make-model's folder as cli_folder_write_whole fills it: the random
 * weights of m's layout, into dir (made empty beside --out; the writer
 * makes its folder itself). */
typedef struct {
    const Model *layout;
    uint64_t seed;
    const Family *family;
    const FolderOptions *folder;
} RandomFolder;

static bool fill_random_folder(void *ctx, const char *dir, StepError *err) {
    const RandomFolder *r = ctx;
    return (rmdir(dir) == 0 || step_fail(err, "%s: %s", dir, strerror(errno))) &&
           hf_model_save_random(r->layout, r->seed, r->family, dir, r->folder->dtype,
                                r->folder->shards, r->folder->tokenizer_from, err);
}

int cli_make_model(int argc, char **argv) {
    /* The shape's sizes start at 0 and every other number at -1: not given
     * (model_fields_mark); config_validate refuses a zero or negative size
     * with its name. */
    MakeModelArgs args = {.c = {0},
                          .seed = 42,
                          .folder = {.family = family_find("llama"), .dtype = ST_F32, .shards = 1}};
    model_fields_mark(&args.c);
    MakeModelOptions options;
    make_model_options(&options, args.folder.family);
    StepError err;
    int parsed = cli_options_parse(&options.command, argc, argv, &args, NULL, &err);
    if (parsed == 0) return 0;
    bool ok = parsed > 0;
    Config c = args.c;
    int seed = args.seed;
    bool untied = args.untied;
    const char *out = args.out;
    FolderOptions folder = args.folder;
    const ModelPreset *preset = args.preset;
    if (preset != NULL && !args.arch_given) folder.family = family_find(preset->family);
    if (preset != NULL && !folder.format_given) folder.hf = true;  /* a folder unless told */
    if (ok && !folder.hf && folder.family != family_find("llama")) /* no place for its traits */
        ok = step_fail(&err,
                       "make-model: a llama2.c checkpoint holds llama's block alone, not %s's: use "
                       "--format hf",
                       folder.family->name);
    if (!folder.hf) folder.family = family_find("llama"); /* llama2.c's block alone */
    const Family *family = folder.family;
    ok = ok && fields_fit(&c, !folder.hf && preset == NULL, family, &err);
    if (ok && !folder.hf && (folder.shards > 1 || folder.tokenizer_from))
        ok = step_fail(&err, "make-model: --shards and --tokenizer-from need --format hf");
    if (ok && preset != NULL) model_preset_apply(preset, &c, &untied);
    if (ok && !folder.hf) ok = file_check_output(out, "--out", &err);
    if (ok && folder.tokenizer_from != NULL) { /* it must load, and fit the vocabulary */
        Tokenizer tok;
        ok = tokenizer_load_json(&tok, folder.tokenizer_from, c.vocab_size, &err);
        if (ok) tokenizer_free(&tok);
    }
    bool deepseek = family->routing == FAMILY_ROUTING_DEEPSEEK2; /* its experts are optional */
    bool moe =
        (family->routing != FAMILY_ROUTING_NONE && !deepseek) ||
        (deepseek && model_field_given(&c, config_field_find("n_experts")) && c.n_experts > 0);
    bool used_given = model_field_given(&c, config_field_find("n_experts_used"));
    bool shared_given = model_field_given(&c, config_field_find("n_shared_experts"));
    family_defaults(&c, family);
    /* DeepSeek-V2's and V2-Lite's two shared experts, which llama.cpp's deepseek2 needs */
    if (deepseek && moe && !shared_given) c.n_shared_experts = 2;
    if (args.no_norm_topk) c.expert_norm_topk = false; /* the family's and preset's true */
    if (ok && (c.n_dense_layers > 0 || args.no_norm_topk) &&
        family->routing != FAMILY_ROUTING_QWEN3MOE && !deepseek)
        ok = step_fail(&err, "make-model: --dense-layers and --no-norm-topk need --arch qwen3moe "
                             "or deepseek2");
    if (ok && deepseek) ok = deepseek2_settle(&c, moe, &err);
    if (ok && moe && c.n_experts == 0)
        ok = step_fail(&err, "make-model: --arch %s needs --experts E", family->name);
    if (moe && !used_given && c.n_experts_used > c.n_experts) c.n_experts_used = c.n_experts;
    if (!moe) c.expert_norm_topk = false;
    if (ok && !folder.hf && c.dim > 0 && c.n_heads > 0 && !config_is_llama2c(&c))
        ok = step_fail(&err,
                       "make-model: a llama2.c checkpoint cannot hold %s%s head size, RoPE or "
                       "norm epsilon: use --format hf",
                       preset != NULL ? preset->name : "this", preset != NULL ? "'s" : "");
    if (folder.hf) family_apply(family, &c);
    if (ok && seed <= 0) ok = step_fail(&err, "make-model: --seed must be positive, got %d", seed);
    if (ok && c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
    c.shared_classifier = !untied;
    Model m = {0};
    RandomFolder random = {
        .layout = &m, .seed = (uint64_t)seed, .family = family, .folder = &folder};
    struct stat st;
    /* a folder is written tensor by tensor, each drawn as it is written: an
     * 8B shape needs no 32 GB of float32; whole or not at all, beside --out
     * first (a folder there is not replaced) */
    if (ok && folder.hf)
        ok = model_reserve_layout(&m, &c, &err) &&
             (lstat(out, &st) != 0 ||
              step_fail(&err, "%s: cannot create: %s", out, strerror(EEXIST))) &&
             cli_folder_write_whole("make-model", out, fill_random_folder, &random, &err);
    else if (ok)
        ok =
            model_init_random(&m, &c, (uint64_t)seed, &err) && model_save_checkpoint(&m, out, &err);
    model_free(&m);
    if (!ok) {
        cli_print_error(&err);
        return cli_signal_caught() ? 128 + cli_signal_caught() : EXIT_BAD_INPUT;
    }
    fprintf(stderr, "wrote %s: %s, %llu parameters, %d layers, %d heads, %d KV heads\n", out,
            config_attention_kind(&c), (unsigned long long)config_param_count(&c), c.n_layers,
            c.n_heads, c.n_kv_heads);
    return 0;
}
