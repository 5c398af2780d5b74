/* test_batch.c: one model, many requests: every request's trace is byte for
 * byte what `generate` writes for it alone, whatever the batch size, arrival
 * order or neighbours; chats are assembled as documented; bad requests fail
 * alone. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/serve/prefix_cache.h"
#include "ref/text/chat.h"
#include "tests/helpers.h"

static char out[1 << 18], err[1 << 16];

/* One request: its JSON line, and the generate options that mean the same. */
typedef struct {
    const char *id, *json, *generate_args;
} Case;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* Run the cases as one batch of each size, then each alone with generate;
 * every trace must be the same bytes (--reproducible leaves out the clock). */
static void expect_invariance(const char *model_args, const Case *cases, int n, const int *sizes,
                              int n_sizes) {
    char requests[512], args[8192];
    snprintf(requests, sizeof requests, "%s", temp_path("requests.jsonl"));
    FILE *f = fopen(requests, "w");
    for (int i = 0; i < n; i++) fprintf(f, "%s\n", cases[i].json);
    fclose(f);
    char alone[512];
    snprintf(alone, sizeof alone, "%s", temp_path("alone"));
    snprintf(args, sizeof args, "mkdir -p %s", alone);
    cr_assert_eq(system(args), 0);
    for (int i = 0; i < n; i++) {
        snprintf(args, sizeof args, "generate %s %s --trace %s/%s.jsonl --reproducible --quiet",
                 model_args, cases[i].generate_args, alone, cases[i].id);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s: %s", args, err);
    }
    for (int s = 0; s < n_sizes; s++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s", temp_path("batch"));
        snprintf(args, sizeof args,
                 "batch %s --requests %s --max-batch %d --trace %s --reproducible --quiet",
                 model_args, requests, sizes[s], dir);
        cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "B=%d: %s", sizes[s],
                     err);
        for (int i = 0; i < n; i++) {
            char a[1024], b[1024];
            snprintf(a, sizeof a, "%s/%s.jsonl", alone, cases[i].id);
            snprintf(b, sizeof b, "%s/%s.jsonl", dir, cases[i].id);
            char *x = slurp(a), *y = slurp(b);
            cr_expect(strcmp(x, y) == 0,
                      "B=%d, request %s: the batched trace differs from generate's", sizes[s],
                      cases[i].id);
            free(x), free(y);
        }
        snprintf(args, sizeof args, "rm -rf %s", dir);
        cr_expect_eq(system(args), 0);
    }
    snprintf(args, sizeof args, "rm -rf %s", alone);
    cr_expect_eq(system(args), 0);
}

/* Mixed prompt lengths, greedy and sampled, steps and BOS stops, staggered
 * arrivals. */
Test(batch, every_request_is_bitwise_what_generate_gives_on_stories260k, .timeout = 120) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    char model_args[2048];
    snprintf(model_args, sizeof model_args, "--model %s --tokenizer %s --trace-level full", model,
             model_file("tok512.bin"));
    const Case cases[] = {
        {"greedy", "{\"id\":\"greedy\",\"prompt\":\"Once upon a time\",\"max_tokens\":24}",
         "--prompt 'Once upon a time' --steps 24"},
        {"long",
         "{\"id\":\"long\",\"prompt\":\"Lily and Ben went to the park. They saw a big dog and a "
         "small cat.\",\"max_tokens\":12,\"arrival_ms\":3}",
         "--prompt 'Lily and Ben went to the park. They saw a big dog and a small cat.' --steps "
         "12"},
        {"topp",
         "{\"id\":\"topp\",\"prompt\":\"One "
         "day\",\"max_tokens\":30,\"temperature\":1,\"top_p\":0.9,"
         "\"seed\":133742}",
         "--prompt 'One day' --steps 30 --temperature 1 --top-p 0.9 --seed 133742"},
        {"topk",
         "{\"id\":\"topk\",\"prompt\":\"The "
         "cat\",\"max_tokens\":18,\"temperature\":0.8,\"top_k\":20,"
         "\"min_p\":0.05,\"sampler_order\":\"vllm\",\"seed\":5,\"arrival_ms\":1}",
         "--prompt 'The cat' --steps 18 --temperature 0.8 --top-k 20 --min-p 0.05 --sampler-order "
         "vllm "
         "--seed 5"},
        {"bos", "{\"id\":\"bos\",\"prompt\":\"\",\"max_tokens\":400}", "--steps 400"},
        {"short", "{\"id\":\"short\",\"prompt\":\"Tom\",\"max_tokens\":1}",
         "--prompt Tom --steps 1"},
    };
    int sizes[] = {1, 2, 5, 16};
    expect_invariance(model_args, cases, 6, sizes, 4);
}

/* A generated GQA model (4 query heads share 2 KV heads) with a 40-position
 * window, so that some requests stop on context_full: written to path. */
static void make_gqa40(char *path, size_t size, const char *name) {
    char args[4096];
    snprintf(path, size, "%s", temp_path(name));
    snprintf(args, sizeof args,
             "make-model --dim 32 --hidden 48 --layers 2 --heads 4 --kv-heads 2 --vocab 512 "
             "--seq-len 40 --seed 3 --out %s",
             path);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
}

Test(batch, every_request_is_bitwise_what_generate_gives_on_a_gqa_model, .timeout = 120) {
    if (model_file("tok512.bin") == NULL) cr_skip_test("tok512 not found");
    char path[512];
    make_gqa40(path, sizeof path, "gqa.bin");
    char model_args[2048];
    snprintf(model_args, sizeof model_args, "--model %s --tokenizer %s --trace-kv", path,
             model_file("tok512.bin"));
    const Case cases[] = {
        {"g1", "{\"id\":\"g1\",\"prompt\":\"Once upon a time\",\"max_tokens\":60}",
         "--prompt 'Once upon a time' --steps 60"},
        {"g2", "{\"id\":\"g2\",\"prompt\":\"A\",\"max_tokens\":7,\"temperature\":1.2,\"seed\":9}",
         "--prompt A --steps 7 --temperature 1.2 --seed 9"},
        {"g3",
         "{\"id\":\"g3\",\"prompt\":\"Lily and Ben went to the park together\",\"max_tokens\":50,"
         "\"temperature\":0.5,\"top_k\":5,\"seed\":2,\"arrival_ms\":2}",
         "--prompt 'Lily and Ben went to the park together' --steps 50 --temperature 0.5 --top-k 5 "
         "--seed 2"},
        {"g4", "{\"id\":\"g4\",\"prompt\":\"Tim\",\"max_tokens\":3}", "--prompt Tim --steps 3"},
        {"g5",
         "{\"id\":\"g5\",\"prompt\":\"The big red ball\",\"max_tokens\":20,\"temperature\":1,"
         "\"min_p\":0.1,\"seed\":4}",
         "--prompt 'The big red ball' --steps 20 --temperature 1 --min-p 0.1 --seed 4"},
    };
    int sizes[] = {1, 2, 5, 16};
    expect_invariance(model_args, cases, 5, sizes, 4);
}

/* The same with caches attention reads widened (int8, bfloat16) and the
 * whole cache traced after each pass (kv_snapshot): a batched pass widens
 * each row's layer into the pass's one room (issue 68), so a row's
 * snapshot must be its own rows again, not the last row's. */
Test(batch, every_request_is_bitwise_what_generate_gives_with_widened_caches, .timeout = 120) {
    if (model_file("tok512.bin") == NULL) cr_skip_test("tok512 not found");
    char path[512];
    make_gqa40(path, sizeof path, "gqa-widened.bin");
    const Case cases[] = {
        {"w1", "{\"id\":\"w1\",\"prompt\":\"Once upon a time\",\"max_tokens\":12}",
         "--prompt 'Once upon a time' --steps 12"},
        {"w2", "{\"id\":\"w2\",\"prompt\":\"A\",\"max_tokens\":7,\"temperature\":1.2,\"seed\":9}",
         "--prompt A --steps 7 --temperature 1.2 --seed 9"},
        {"w3", "{\"id\":\"w3\",\"prompt\":\"The big red ball\",\"max_tokens\":9}",
         "--prompt 'The big red ball' --steps 9"},
    };
    int sizes[] = {1, 3};
    const char *caches[] = {"--quant-kv int8", "--kv-dtype bf16"};
    for (int c = 0; c < 2; c++) {
        char model_args[2048];
        snprintf(model_args, sizeof model_args, "--model %s --tokenizer %s --trace-kv=full %s",
                 path, model_file("tok512.bin"), caches[c]);
        expect_invariance(model_args, cases, 3, sizes, 2);
    }
}

/* A request that exactly fills the context (issue 67): the GQA model above
 * holds 40 positions; "Once upon a time" is BOS and 4 pieces (403, 407,
 * 261, 378: tests/llama_cpp_check.py's ids). 5 + 36 = 41 ids feed all 40
 * positions and draw the last token: it ends by its max_tokens ("steps"),
 * its 36 tokens all there. One token more (37) needs position 40: it ends
 * "context_full" at the same 41 ids (docs/batching.md: a full context
 * stops a request sooner), and neither disturbs the request beside it. */
static bool starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

Test(batch, a_request_that_exactly_fills_the_context, .timeout = 60) {
    if (model_file("tok512.bin") == NULL) cr_skip_test("tok512 not found");
    char path[512], requests[512], args[4096];
    make_gqa40(path, sizeof path, "gqa40.bin");
    snprintf(requests, sizeof requests, "%s", temp_path("fill.jsonl"));
    FILE *f = fopen(requests, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"id\":\"full\",\"prompt\":\"Once upon a time\",\"max_tokens\":36}\n"
               "{\"id\":\"more\",\"prompt\":\"Once upon a time\",\"max_tokens\":37}\n"
               "{\"id\":\"beside\",\"prompt\":\"Tim\",\"max_tokens\":3}\n");
    fclose(f);
    snprintf(args, sizeof args,
             "batch --model %s --tokenizer %s --requests %s --max-batch 3 --quiet", path,
             model_file("tok512.bin"), requests);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 0, "%s", err);
    const char *full = strstr(out, "{\"id\":\"full\""), *more = strstr(out, "{\"id\":\"more\"");
    const char *beside = strstr(out, "{\"id\":\"beside\"");
    cr_assert(full && more && beside, "%s", out);
    cr_expect(starts(full, "{\"id\":\"full\",\"stop_reason\":\"steps\","), "%.80s", full);
    cr_expect(strstr(full, "\"prompt_tokens\":5,\"generated_tokens\":36,") != NULL, "%.400s", full);
    cr_expect(starts(more, "{\"id\":\"more\",\"stop_reason\":\"context_full\","), "%.80s", more);
    cr_expect(strstr(more, "\"prompt_tokens\":5,\"generated_tokens\":36,") != NULL, "%.400s", more);
    cr_expect(starts(beside, "{\"id\":\"beside\",\"stop_reason\":\"steps\","), "%.80s", beside);
}

/* The exact ids of a fixed conversation under each template, as
 * sentencepiece gives them for the documented parts
 * (data/tokenizer/chat_expected.json, tests/sentencepiece_check.py chat). */
Test(batch, chat_templates_give_sentencepiece_ids) {
    const char *bin = model_file("tok512.bin");
    if (bin == NULL) cr_skip_test("tok512.bin not found");
    Tokenizer tok;
    StepError e;
    cr_assert(tokenizer_load_bin(&tok, bin, 512, &e));
    cJSON *doc = read_json_file("data/tokenizer/chat_expected.json");
    cr_assert_not_null(doc);
    const cJSON *conv = cJSON_GetObjectItem(doc, "conversation"), *msg;
    ChatMessage messages[8];
    int n = 0;
    cJSON_ArrayForEach(msg, cJSON_GetObjectItem(conv, "messages")) {
        messages[n].role = cJSON_GetObjectItem(msg, "role")->valuestring;
        messages[n++].content = cJSON_GetObjectItem(msg, "content")->valuestring;
    }
    const char *system = cJSON_GetObjectItem(conv, "system")->valuestring;
    ChatTemplate templates[] = {CHAT_LLAMA2, CHAT_CHATML};
    for (int t = 0; t < 2; t++) {
        ChatPrompt p;
        ChatInput in = {.system = system, .messages = messages, .n_messages = n};
        cr_assert(chat_assemble(&tok, templates[t], &in, &p, &e), "%s", e.message);
        const cJSON *want = cJSON_GetObjectItem(doc, chat_template_name(templates[t]));
        cr_assert_eq(p.n, cJSON_GetArraySize(want), "%s: %d ids, sentencepiece %d",
                     chat_template_name(templates[t]), p.n, cJSON_GetArraySize(want));
        for (int i = 0; i < p.n; i++)
            cr_expect_eq(p.tokens[i], cJSON_GetArrayItem(want, i)->valueint, "%s id %d",
                         chat_template_name(templates[t]), i);
        /* the segments tile the sequence, and the system prompt is one of them */
        int covered = 0, system_tokens = 0;
        for (int s = 0; s < p.n_segments; s++) {
            cr_expect_eq(p.segments[s].start, covered);
            covered = p.segments[s].end;
            if (strcmp(p.segments[s].source, "system") == 0)
                system_tokens += p.segments[s].end - p.segments[s].start;
        }
        cr_expect_eq(covered, p.n);
        int *sys_ids, n_sys;
        cr_assert(tokenizer_encode(&tok, system, false, &sys_ids, &n_sys, &e));
        cr_expect_eq(system_tokens, n_sys);
        free(sys_ids);
        chat_prompt_free(&p);
    }
    /* llama2 places BOS before each [INST] and EOS after each answer */
    ChatPrompt p;
    ChatInput no_system = {.messages = messages, .n_messages = n};
    cr_assert(chat_assemble(&tok, CHAT_LLAMA2, &no_system, &p, &e));
    int bos = 0, eos = 0;
    for (int i = 0; i < p.n; i++) bos += p.tokens[i] == 1, eos += p.tokens[i] == 2;
    cr_expect_eq(bos, 2);
    cr_expect_eq(eos, 1);
    chat_prompt_free(&p);
    cJSON_Delete(doc);
    tokenizer_free(&tok);
}

/* Memory notes and documents go into the system turn (and before a plain
 * prompt) with the ids sentencepiece gives for the documented parts; the
 * segments name each note and document. */
Test(batch, memory_and_documents_give_sentencepiece_ids) {
    const char *bin = model_file("tok512.bin");
    if (bin == NULL) cr_skip_test("tok512.bin not found");
    Tokenizer tok;
    StepError e;
    cr_assert(tokenizer_load_bin(&tok, bin, 512, &e));
    cJSON *doc = read_json_file("data/tokenizer/chat_expected.json");
    cr_assert_not_null(doc);
    const cJSON *parts = cJSON_GetObjectItem(doc, "with_parts");
    ChatInput in;
    cr_assert(chat_input_from_json(cJSON_GetObjectItem(parts, "conversation"), true, &in, &e), "%s",
              e.message);
    cr_assert_eq(in.n_memory, 2);
    cr_assert_eq(in.n_documents, 1);
    const char *names[] = {"llama2", "chatml", "plain"};
    for (int t = 0; t < 3; t++) {
        ChatPrompt p;
        if (t < 2) {
            cr_assert(chat_assemble(&tok, t == 0 ? CHAT_LLAMA2 : CHAT_CHATML, &in, &p, &e), "%s",
                      e.message);
        } else {
            ChatInput plain = {.memory = in.memory,
                               .n_memory = in.n_memory,
                               .documents = in.documents,
                               .n_documents = in.n_documents};
            cr_assert(chat_assemble_plain(&tok, &plain, in.messages[0].content, &p, &e), "%s",
                      e.message);
        }
        const cJSON *want = cJSON_GetObjectItem(parts, names[t]);
        cr_assert_eq(p.n, cJSON_GetArraySize(want), "%s: %d ids, sentencepiece %d", names[t], p.n,
                     cJSON_GetArraySize(want));
        for (int i = 0; i < p.n; i++)
            cr_expect_eq(p.tokens[i], cJSON_GetArrayItem(want, i)->valueint, "%s id %d", names[t],
                         i);
        /* the note's tokens are the note's own encoding, credited to it */
        int *ids, n;
        cr_assert(tokenizer_encode(&tok, in.memory[1], false, &ids, &n, &e));
        int found = 0;
        for (int s = 0; s < p.n_segments; s++) {
            const ChatSegment *g = &p.segments[s];
            if (strcmp(g->source, "memory") == 0 && g->turn == 1) {
                cr_expect_eq(g->end - g->start, n);
                cr_expect_arr_eq(p.tokens + g->start, ids, (size_t)n * sizeof(int));
                found++;
            }
            if (strcmp(g->source, "document:dogs.txt") == 0) found++;
        }
        cr_expect_eq(found, 2, "%s: a memory segment and a document segment", names[t]);
        free(ids);
        /* each part fits a window of 16; the document's 14-odd tokens not 8 */
        cr_expect(chat_parts_fit(&p, 16, &e), "%s", e.message);
        cr_expect_not(chat_parts_fit(&p, 8, &e));
        chat_prompt_free(&p);
    }
    chat_input_free(&in);
    cJSON_Delete(doc);
    tokenizer_free(&tok);
}

/* Each bad request gets its own error line; the good ones are served; the
 * exit status says some failed. An unreadable file is exit status 2. */
Test(batch, bad_requests_fail_alone) {
    const char *model = model_file("stories260K.bin");
    if (model == NULL) cr_skip_test("stories260K not found");
    char requests[512], metrics[512], args[4096];
    snprintf(requests, sizeof requests, "%s", temp_path("bad.jsonl"));
    snprintf(metrics, sizeof metrics, "%s", temp_path("metrics.json"));
    FILE *f = fopen(requests, "w");
    fputs("{\"id\":\"ok1\",\"prompt\":\"Once upon a time\",\"max_tokens\":5}\n"
          "{\"id\":\"broken\",\"prompt\":\"x\"\n"
          "{\"id\":\"role\",\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}\n"
          "{\"id\":\"nocontent\",\"messages\":[{\"role\":\"user\"}]}\n"
          "{\"id\":\"neg\",\"prompt\":\"x\",\"max_tokens\":-2}\n"
          "{\"id\":\"ok1\",\"prompt\":\"again\",\"max_tokens\":2}\n",
          f);
    fprintf(f, "{\"id\":\"huge\",\"prompt\":\"");
    for (int i = 0; i < 200; i++) fputs("Once upon a time, ", f);
    fputs("\",\"max_tokens\":2}\n{\"id\":\"ok2\",\"prompt\":\"One day\",\"max_tokens\":4}\n", f);
    fclose(f);
    snprintf(args, sizeof args,
             "batch --model %s --tokenizer %s --requests %s --metrics-json %s --quiet", model,
             model_file("tok512.bin"), requests, metrics);
    cr_assert_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 1, "%s", err);
    struct {
        const char *id, *fragment;
    } want[] = {
        {"line-2", "line 2: not valid JSON"}, {"role", "unknown role 'wizard'"},
        {"nocontent", "has no content"},      {"neg", "max_tokens must be at least 1, got -2"},
        {"ok1", "duplicate id 'ok1'"},        {"huge", "but the context holds 512"}};
    int errors = 0, served = 0;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        cr_assert_not_null(o, "%s", line);
        const cJSON *e = cJSON_GetObjectItem(o, "error");
        const char *id = cJSON_GetObjectItem(o, "id")->valuestring;
        if (e == NULL) {
            served++;
            cr_expect(strcmp(id, "ok1") == 0 || strcmp(id, "ok2") == 0);
            const cJSON *m = cJSON_GetObjectItem(o, "metrics");
            cr_expect_geq(cJSON_GetObjectItem(m, "ttft_ms")->valuedouble,
                          cJSON_GetObjectItem(m, "queue_time_ms")->valuedouble);
            double ttft = cJSON_GetObjectItem(m, "ttft_ms")->valuedouble,
                   itl = cJSON_GetObjectItem(m, "itl_mean_ms")->valuedouble,
                   e2e = cJSON_GetObjectItem(m, "e2e_latency_ms")->valuedouble;
            int n = cJSON_GetObjectItem(o, "generated_tokens")->valueint;
            cr_expect_geq(e2e, ttft);
            /* the first token's time, then n - 1 gaps, end at the last
             * token: no later than the request's end */
            cr_expect_gt(n, 1);
            cr_expect_leq(ttft + itl * (n - 1), e2e + 1e-6, "%s: ttft %g + %d gaps of %g > e2e %g",
                          id, ttft, n - 1, itl, e2e);
        } else {
            bool known = false;
            for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
                known |=
                    strcmp(want[i].id, id) == 0 && strstr(e->valuestring, want[i].fragment) != NULL;
            cr_expect(known, "unexpected error line %s", line);
            errors++;
        }
        cJSON_Delete(o);
    }
    cr_expect_eq(errors, 6);
    cr_expect_eq(served, 2);
    cJSON *m = read_json_file(metrics);
    cr_assert_not_null(m);
    cr_expect_eq(cJSON_GetObjectItem(m, "completed")->valueint, 2);
    cr_expect_eq(cJSON_GetObjectItem(m, "failed")->valueint, 6);
    cr_expect_eq(cJSON_GetObjectItem(m, "generated_tokens")->valueint, 9);
    cr_expect_leq(cJSON_GetObjectItem(m, "peak_active")->valueint, 8);
    cJSON_Delete(m);
    snprintf(args, sizeof args, "batch --model %s --tokenizer %s --requests build/tmp/nope.jsonl",
             model, model_file("tok512.bin"));
    cr_expect_eq(run_stepwise(args, out, sizeof out, err, sizeof err), 2);
    cr_expect(strstr(err, "cannot open") != NULL, "%s", err);
}

/* The prefix cache matches a prompt from its first token: with no BOS in
 * front (a tokenizer that adds none), two prompts that differ only there
 * share no rows at all, since row p depends on tokens 0..p. Worked by
 * hand: kept {5, 1, 2, 3}; {6, 1, 2, 3, 4} takes 0 positions, {5, 1, 2,
 * 9, 4} takes 3 (positions 0..2, the very rows kept). */
Test(batch, prefix_cache_matches_from_the_first_token) {
    Model m;
    Tokenizer tok;
    load_tiny(&m, &tok);
    StepError e;
    RunState src, dst;
    cr_assert(run_state_init(&src, &m.config, 8, 1, &e), "%s", e.message);
    cr_assert(run_state_init(&dst, &m.config, 8, 1, &e), "%s", e.message);
    size_t n = (size_t)src.seq.cache.n_layers * (size_t)src.seq.cache.capacity *
               (size_t)src.seq.cache.kv_dim;
    for (size_t i = 0; i < n; i++)
        src.seq.cache.key[i] = (float)i, src.seq.cache.value[i] = -(float)i;
    PrefixCache p;
    cr_assert(prefix_cache_init(&p, &m.config, KV_F32, 1 << 20, &e), "%s", e.message);
    int kept[] = {5, 1, 2, 3}, other_first[] = {6, 1, 2, 3, 4}, shared3[] = {5, 1, 2, 9, 4};
    cr_assert(prefix_cache_put(&p, kept, 4, &src.seq.cache));
    cr_expect_eq(prefix_cache_take(&p, other_first, 5, &dst.seq.cache), 0,
                 "another first token: nothing is shared");
    cr_expect_eq(prefix_cache_take(&p, shared3, 5, &dst.seq.cache), 3);
    size_t row = (size_t)src.seq.cache.kv_dim;
    for (int l = 0; l < src.seq.cache.n_layers; l++) {
        size_t at = (size_t)l * (size_t)src.seq.cache.capacity * row;
        cr_expect_eq(
            memcmp(dst.seq.cache.key + at, src.seq.cache.key + at, 3 * row * sizeof(float)), 0);
        cr_expect_eq(
            memcmp(dst.seq.cache.value + at, src.seq.cache.value + at, 3 * row * sizeof(float)), 0);
    }
    prefix_cache_free(&p);
    run_state_free(&src), run_state_free(&dst);
    model_free(&m), tokenizer_free(&tok);
}
