/* test_tokenizer_json.c: a tokenizer.json's parts on cases small enough to
 * work by hand: the byte-level alphabet, Split's four behaviours (the
 * tokenizers library documents them on "the-final--countdown"), merges by
 * rank, byte fallback and unk, added tokens, tokenizer_config.json, chat
 * templates recognised. The real tokenizers are checked against the
 * JavaScript reference by tests/tokenizer_json_check.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/text/chat.h"
#include "ref/text/pretokenize.h"
#include "ref/text/tokenizer_json.h"

static Tokenizer parse_ok(const char *json, const char *config) {
    Tokenizer t;
    StepError err;
    cr_assert(tokenizer_parse_json(&t, json, config, "test", 0, &err), "%s", err.message);
    return t;
}

/* The ids of text, as a string "1 2 3" for one-line comparisons. */
static const char *ids_of(const Tokenizer *t, const char *text, bool bos) {
    static char out[512];
    int *ids, n;
    StepError err;
    cr_assert(tokenizer_encode(t, text, bos, &ids, &n, &err), "%s", err.message);
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%d", i ? " " : "", ids[i]);
    free(ids);
    return out;
}

/* GPT-2's bytes_to_unicode: printable bytes are themselves; 0..32 are
 * 256..288, 127..160 are 289..322 and 173 is 323. So ' ' is U+0120 'Ġ',
 * '\n' U+010A 'Ċ', 0x7F U+0121 'ġ', 0xAD U+0143 'Ń'. */
Test(tokenizer_json, byte_level_alphabet_is_gpt2s) {
    char c[2];
    cr_expect_eq(byte_level_char('A', c), 1);
    cr_expect_eq(c[0], 'A');
    struct {
        unsigned char byte;
        const char *utf8;
        unsigned cp;
    } known[] = {{' ', "\xC4\xA0", 0x120},
                 {'\n', "\xC4\x8A", 0x10A},
                 {0x7F, "\xC4\xA1", 0x121},
                 {0xAD, "\xC5\x83", 0x143},
                 {0xFF, "\xC3\xBF", 0xFF}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        cr_expect_eq(byte_level_char(known[i].byte, c), 2);
        cr_expect(memcmp(c, known[i].utf8, 2) == 0, "byte %d", known[i].byte);
        cr_expect_eq(byte_level_byte(known[i].cp), known[i].byte);
    }
    int seen[324] = {0};
    for (int b = 0; b < 256; b++) { /* a bijection onto 256 code points below 324 */
        int n = byte_level_char((unsigned char)b, c);
        unsigned cp = n == 1 ? (unsigned char)c[0]
                             : (((unsigned char)c[0] & 0x1Fu) << 6) | ((unsigned char)c[1] & 0x3Fu);
        cr_assert_lt(cp, 324u);
        cr_expect_eq(seen[cp]++, 0, "code point %u twice", cp);
        cr_expect_eq(byte_level_byte(cp), b);
    }
    cr_expect_eq(byte_level_byte(324), -1);
    cr_expect_eq(byte_level_byte('\n'), -1, "a byte that is not printable is not its own symbol");
}

/* The pieces the pre-tokenizer cuts, joined by '|'. */
static void collect_piece(void *ctx, const char *piece, int len, int added_id) {
    char *out = ctx;
    (void)added_id;
    snprintf(out + strlen(out), 256 - strlen(out), "%s%.*s", out[0] ? "|" : "", len, piece);
}

static const char *pieces_of(const Tokenizer *t, const char *text) {
    static char out[256];
    out[0] = '\0';
    BpeObserver obs = {.ctx = out, .on_piece = collect_piece};
    int *ids, n;
    StepError err;
    cr_assert(tokenizer_encode_observed(t, text, false, &obs, &ids, &n, &err), "%s", err.message);
    free(ids);
    return out;
}

#define SPLIT_VOCAB                                                                                \
    "{\"t\":0,\"h\":1,\"e\":2,\"-\":3,\"f\":4,\"i\":5,\"n\":6,\"a\":7,\"l\":8,\"c\":9,\"o\":10,"   \
    "\"u\":11,\"w\":12,\"d\":13}"

Test(tokenizer_json, split_behaviours_are_the_documented_ones) {
    struct {
        const char *behavior, *want;
    } cases[] = {{"Removed", "the|final|countdown"},
                 {"Isolated", "the|-|final|-|-|countdown"},
                 {"MergedWithPrevious", "the-|final-|-|countdown"},
                 {"MergedWithNext", "the|-final|-|-countdown"}};
    for (int i = 0; i < 4; i++) {
        char json[1024];
        snprintf(json, sizeof json,
                 "{\"model\":{\"type\":\"BPE\",\"vocab\":" SPLIT_VOCAB ",\"merges\":[]},"
                 "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},"
                 "\"behavior\":\"%s\",\"invert\":false}}",
                 cases[i].behavior);
        Tokenizer t = parse_ok(json, NULL);
        cr_expect_str_eq(pieces_of(&t, "the-final--countdown"), cases[i].want, "%s",
                         cases[i].behavior);
        tokenizer_free(&t);
    }
}

/* Digits (SmolLM2's tokenizer has it): ASCII digits one by one, or in runs. */
Test(tokenizer_json, digits_pre_tokenizer) {
    const char *vocab = "{\"1\":0,\"2\":1,\"a\":2,\"12\":3}";
    for (int each = 0; each < 2; each++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"model\":{\"type\":\"BPE\",\"vocab\":%s,\"merges\":[\"1 2\"]},"
                 "\"pre_tokenizer\":{\"type\":\"Digits\",\"individual_digits\":%s}}",
                 vocab, each ? "true" : "false");
        Tokenizer t = parse_ok(json, NULL);
        cr_expect_str_eq(pieces_of(&t, "a12a"), each ? "a|1|2|a" : "a|12|a");
        cr_expect_str_eq(ids_of(&t, "a12a", false), each ? "2 0 1 2" : "2 3 2");
        tokenizer_free(&t);
    }
}

/* "abc" as a, b, c. With ranks (b c) 0, (a b) 1, (a bc) 2: bc first, then
 * a+bc. With (a b) 0, (b c) 1, (ab c) 2: ab first, then ab+c. Both end as
 * abc (id 5); with only the first two rules of the second list, ab c. */
Test(tokenizer_json, merges_go_by_rank) {
    const char *vocab = "{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"bc\":4,\"abc\":5}";
    char json[512];
    snprintf(json, sizeof json,
             "{\"model\":{\"type\":\"BPE\",\"vocab\":%s,\"merges\":[\"b c\",\"a b\",\"a bc\"]}}",
             vocab);
    Tokenizer t = parse_ok(json, NULL);
    cr_expect_str_eq(ids_of(&t, "abc", false), "5");
    cr_expect_str_eq(ids_of(&t, "cab", false), "2 3");
    cr_expect_str_eq(ids_of(&t, "bcab", false), "4 3");
    tokenizer_free(&t);
    snprintf(json, sizeof json,
             "{\"model\":{\"type\":\"BPE\",\"vocab\":%s,\"merges\":[[\"a\",\"b\"],[\"b\",\"c\"]]}}",
             vocab);
    t = parse_ok(json, NULL);
    cr_expect_str_eq(ids_of(&t, "abc", false), "3 2", "ab wins (rank 0), and ab c is no rule");
    cr_expect_str_eq(ids_of(&t, "bbc", false), "1 4");
    tokenizer_free(&t);
}

/* SentencePiece style: Prepend and Replace make " x" "▁▁x"; byte_fallback
 * spells é (C3 A9) as <0xC3> <0xA9>; ß has no byte pieces here, so it is
 * <unk>, and fuse_unk makes a run of them one. Decoding reverses it all. */
Test(tokenizer_json, sentencepiece_style_normalizers_byte_fallback_and_unk) {
    const char *json =
        "{\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,"
        "\"fuse_unk\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,\"<0xC3>\":3,"
        "\"<0xA9>\":4,\"\xE2\x96\x81\":5,\"a\":6,\"\xE2\x96\x81"
        "a\":7},"
        "\"merges\":[\"\xE2\x96\x81 a\"]},"
        "\"added_tokens\":[{\"id\":1,\"content\":\"<s>\",\"special\":true}],"
        "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\","
        "\"prepend\":\"\xE2\x96\x81\"},{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},"
        "\"content\":\"\xE2\x96\x81\"}]},"
        "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":"
        "{\"String\":\"\xE2\x96\x81\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},"
        "{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]}}";
    const char *config = "{\"bos_token\":{\"content\":\"<s>\"},\"eos_token\":\"</s>\","
                         "\"add_bos_token\":true}";
    Tokenizer t = parse_ok(json, config);
    cr_expect_eq(t.bos_id, 1);
    cr_expect_eq(t.eos_id, 2);
    cr_expect(t.add_bos);
    cr_expect_str_eq(ids_of(&t, "a", true), "1 7");
    cr_expect_str_eq(ids_of(&t, " a", false), "5 7");
    cr_expect_str_eq(ids_of(&t, "a\xC3\xA9", false), "7 3 4");
    cr_expect_str_eq(ids_of(&t,
                            "a\xC3\x9F\xC3\x9F"
                            "a",
                            false),
                     "7 0 6", "ßß is one <unk>");
    cr_expect_str_eq(ids_of(&t, "a<s>a", false), "7 1 7", "each stretch gets its own prefix");
    int ids[] = {1, 7, 3, 4, 5, 7};
    char *text = tokenizer_decode_tokens(&t, ids, 6, -1);
    /* BOS adds nothing, " a" after it loses its dummy space, ▁ and ▁a are two spaces */
    cr_expect_str_eq(text, "a\xC3\xA9  a");
    free(text);
    cr_expect_str_eq(t.pieces[3], "<0xC3>", "a byte piece is shown as itself");
    cr_expect_str_eq(t.pieces[7], " a");
    tokenizer_free(&t);
}

/* A byte-level vocabulary: the 256 byte symbols, "Ġa" (space a) and
 * "aa"; the Llama 3 pattern; an added token with lstrip. NFC composes
 * e + U+0301 to é first. */
Test(tokenizer_json, byte_level_with_added_tokens_and_nfc) {
    char *json = malloc(1 << 16);
    int n =
        snprintf(json, 1 << 16, "{\"model\":{\"type\":\"BPE\",\"ignore_merges\":false,\"vocab\":{");
    for (int b = 0; b < 256; b++) {
        char c[3] = {0};
        byte_level_char((unsigned char)b, c);
        if (b == '"' || b == '\\')
            n += snprintf(json + n, (size_t)(1 << 16) - (size_t)n, "\"\\%s\":%d,", c, b);
        else
            n += snprintf(json + n, (size_t)(1 << 16) - (size_t)n, "\"%s\":%d,", c, b);
    }
    snprintf(json + n, (size_t)(1 << 16) - (size_t)n,
             "\"\xC4\xA0"
             "a\":256,\"aa\":257},\"merges\":[\"a a\",\"\xC4\xA0 a\"]},"
             "\"added_tokens\":[{\"id\":258,\"content\":\"<m>\",\"lstrip\":true,\"special\":true}],"
             "\"normalizer\":{\"type\":\"NFC\"},"
             "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
             "\"pattern\":{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?"
             "\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
             "\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false},"
             "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]},"
             "\"decoder\":{\"type\":\"ByteLevel\"}}");
    Tokenizer t = parse_ok(json, NULL);
    free(json);
    /* "aaa a": a a a -> (a a) first (rank 0) leftmost: aa a; " a" -> Ġa */
    cr_expect_str_eq(ids_of(&t, "aaa a", false), "257 97 256");
    cr_expect_str_eq(pieces_of(&t, "12345 IT'S"), "123|45|\xC4\xA0IT|'S", "digits in threes");
    cr_expect_str_eq(ids_of(&t, "a <m>", false), "97 258", "lstrip takes the space");
    cr_expect_str_eq(ids_of(&t, "e\xCC\x81", false), "195 169", "NFC: U+00E9 is C3 A9");
    int ids[] = {195, 169, 256};
    char *text = tokenizer_decode_tokens(&t, ids, 3, -1);
    cr_expect_str_eq(text, "\xC3\xA9 a");
    free(text);
    cr_expect_str_eq(t.pieces[195], "\xC3\x83", "a lone byte shows as its byte-level symbol");
    cr_expect_eq(t.bos_id, -1, "no post-processor, no config: no BOS");
    cr_expect_str_eq(ids_of(&t, "a", true), "97");
    StepError err;
    int *bad_ids, n_bad;
    cr_expect_not(tokenizer_encode(&t, "\xC3", false, &bad_ids, &n_bad, &err));
    cr_expect(strstr(err.message, "UTF-8") != NULL, "%s", err.message);
    tokenizer_free(&t);
}

Test(tokenizer_json, known_chat_templates_are_recognised) {
    ChatTemplate t;
    StepError err;
    cr_expect(chat_template_recognise("{{ '<|im_start|>' + message['role'] }}", &t, &err));
    cr_expect_eq(t, CHAT_CHATML);
    cr_expect(chat_template_recognise("{{ '<|start_header_id|>' }}", &t, &err));
    cr_expect_eq(t, CHAT_LLAMA3);
    cr_expect(chat_template_recognise("{{ bos_token + '[INST] ' }} <<SYS>>", &t, &err));
    cr_expect_eq(t, CHAT_LLAMA2);
    cr_expect_not(chat_template_recognise("<|start_header_id|> Cutting Knowledge Date", &t, &err));
    cr_expect(strstr(err.message, "--chat-template llama3") != NULL, "%s", err.message);
    cr_expect_not(chat_template_recognise("{{ messages }}", &t, &err));
    cr_expect(strstr(err.message, "--chat-template NAME") != NULL, "%s", err.message);
    cr_expect_not(chat_template_recognise(NULL, &t, &err));
}

Test(tokenizer_json, bad_files_are_refused_by_name) {
    struct {
        const char *json, *says;
    } cases[] = {
        {"[]", "not a JSON object"},
        {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}",
         "model type WordPiece is not supported"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", "no id"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}",
         "id 0 is given"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}", "merges[0]"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a\"]}}", "two tokens"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":"
         "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}}",
         "pre_tokenizer Split"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"normalizer\":"
         "{\"type\":\"Lowercase\"}}",
         "normalizer Lowercase is not supported"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],"
         "\"continuing_subword_prefix\":\"##\"}}",
         "continuing_subword_prefix"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Tokenizer t;
        StepError err;
        cr_expect_not(tokenizer_parse_json(&t, cases[i].json, NULL, "x.json", 0, &err), "case %zu",
                      i);
        cr_expect(strstr(err.message, cases[i].says) != NULL, "case %zu: %s", i, err.message);
    }
    Tokenizer t;
    StepError err;
    cr_expect_not(tokenizer_parse_json(&t,
                                       "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":7},"
                                       "\"merges\":[]}}",
                                       NULL, "x.json", 4, &err));
    cr_expect(strstr(err.message, "ids up to 7 but the model's vocabulary has 4") != NULL, "%s",
              err.message);
    cr_expect_not(tokenizer_parse_json(&t,
                                       "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},"
                                       "\"merges\":[]}}",
                                       "{\"eos_token\":\"</s>\"}", "x.json", 0, &err));
    cr_expect(strstr(err.message, "eos_token '</s>' is not a token") != NULL, "%s", err.message);
}
