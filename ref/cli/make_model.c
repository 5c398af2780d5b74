/* cli/make_model.c: `stepwise make-model`, a random-weight checkpoint of any
 * shape, for shapes the real models do not have (MHA, GQA, MQA, untied,
 * the 15M benchmark shape). */
#include <stddef.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/cli/commands.h"
#include "ref/formats/checkpoint.h"
#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/cli/presets.h"
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

/* Whether a llama2.c checkpoint can hold c: its header has no head size,
 * RoPE base or scaling, norm epsilon or architecture. */
static bool fits_llama2c(const Config *c, HfArchitecture arch) {
    return arch == HF_LLAMA && config_head_dim(c) * c->n_heads == c->dim &&
           config_rope_theta(c) == 10000.0f && config_norm_eps(c) == 1e-5f &&
           c->rope_scaling.type == ROPE_SCALING_NONE;
}

/* The folder options (--format hf and what goes with it). */
typedef struct {
    bool hf;
    bool format_given; /* --format was on the command line */
    HfArchitecture arch;
    SafetensorsDtype dtype;
    int shards;
    const char *tokenizer_from; /* a folder with a tokenizer.json to copy in */
} FolderOptions;

/* Gemma's numbers not given (a negative value) take its config class's
 * defaults: Gemma 2's soft-caps 50 and 30 and every other layer sliding,
 * Gemma 3's no soft-caps, five sliding layers in six and a local RoPE base
 * of 10000; no window and the head size as the attention scale for both. */
static void gemma_defaults(Config *c, HfArchitecture arch) {
    bool gemma3 = arch == HF_GEMMA3;
    if (c->attn_softcap < 0) c->attn_softcap = gemma3 ? 0 : 50;
    if (c->final_softcap < 0) c->final_softcap = gemma3 ? 0 : 30;
    if (c->sliding_pattern < 0) c->sliding_pattern = gemma3 ? 6 : 2;
    if (c->rope_local_theta < 0) c->rope_local_theta = gemma3 ? 10000 : 0;
    if (c->sliding_window < 0) c->sliding_window = 0;
    if (c->query_scale < 0) c->query_scale = 0;
}

/* Whether c has a Gemma number that was given (the rest are still
 * negative: not given). */
static bool gemma_given(const Config *c) {
    return c->attn_softcap >= 0 || c->final_softcap >= 0 || c->sliding_pattern >= 0 ||
           c->rope_local_theta >= 0 || c->query_scale >= 0;
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
    bool untied, arch_given;
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
        case OPT_ARCH:
            a->arch_given = true;
            return hf_architecture_parse(value, &f->arch) ||
                   step_fail(err,
                             "make-model: --arch is llama, mistral, qwen2, qwen3, gpt2, phi3, "
                             "gemma2, gemma3, mixtral or qwen3moe, not '%s'",
                             value);
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

/* The shape's sizes take any int: config_validate refuses zero and
 * negative ones, naming them. */
#define SIZE_MIN_MAX    -(1L << 31) + 1, (1L << 31) - 1
#define CONFIG_FIELD(f) offsetof(MakeModelArgs, c.f)

static const CliOption SHAPE_OPTIONS[] = {
    {"dim", "D", OPTION_INT, CONFIG_FIELD(dim), SIZE_MIN_MAX, .help = "the model width"},
    {"hidden", "H", OPTION_INT, CONFIG_FIELD(hidden_dim), SIZE_MIN_MAX,
     .help = "the MLP's hidden width"},
    {"layers", "L", OPTION_INT, CONFIG_FIELD(n_layers), SIZE_MIN_MAX, .help = "blocks"},
    {"heads", "N", OPTION_INT, CONFIG_FIELD(n_heads), SIZE_MIN_MAX, .help = "query heads"},
    {"kv-heads", "M", OPTION_INT, CONFIG_FIELD(n_kv_heads), SIZE_MIN_MAX,
     .help = "KV heads, dividing N (default N)"},
    {"vocab", "V", OPTION_INT, CONFIG_FIELD(vocab_size), SIZE_MIN_MAX, .help = "token ids"},
    {"seq-len", "S", OPTION_INT, CONFIG_FIELD(seq_len), SIZE_MIN_MAX,
     .help = "the context, in positions"},
    {"seed", "X", OPTION_INT, offsetof(MakeModelArgs, seed), SIZE_MIN_MAX,
     .help = "the random weights' seed (default 42)"},
    {"untied", NULL, OPTION_FLAG, offsetof(MakeModelArgs, untied),
     .help = "a classifier of its own (default: tied to the embedding)"},
    {"out", "FILE", OPTION_TEXT, offsetof(MakeModelArgs, out), .required = true,
     .help = "where to write (written whole or not at all)"},
    CLI_OPTIONS_END};

static const CliOption FOLDER_OPTIONS[] = {
    {"format", "hf", OPTION_CUSTOM, .parse = parse_option, .id = OPT_FORMAT,
     .help = "write OUT as a folder: config.json and safetensors"},
    {"arch", "A", OPTION_CUSTOM, .parse = parse_option, .id = OPT_ARCH,
     .help = "llama (default), mistral, qwen2 (q/k/v biases), qwen3\n"
             "(q/k norms), gpt2 (LayerNorm, GELU MLP, learned positions,\n"
             "biases: GPT2LMHeadModel's Conv1D tensors), phi3 (Llama's\n"
             "block, q/k/v and gate/up fused in the files), gemma2, gemma3,\n"
             "mixtral or qwen3moe"},
    {"dtype", "T", OPTION_CUSTOM, .parse = parse_option, .id = OPT_DTYPE,
     .help = "f32 (default), f16 or bf16 (rounded to nearest even)"},
    {"shards", "N", OPTION_INT, offsetof(MakeModelArgs, folder.shards), 1, 64,
     .help = "N safetensors files and their index (default 1)"},
    {"head-dim", "H", OPTION_INT, CONFIG_FIELD(head_dim), 2, 1 << 16,
     .help = "the head size, if not dim / heads"},
    {"rope-theta", "X", OPTION_FLOAT, CONFIG_FIELD(rope_theta), 1, 1000000000,
     .help = "the RoPE base (default 10000)"},
    {"tokenizer-from", "DIR", OPTION_TEXT, offsetof(MakeModelArgs, folder.tokenizer_from),
     .help = "copy DIR's tokenizer.json (and tokenizer_config.json) in;\n"
             "its ids must be below --vocab"},
    CLI_OPTIONS_END};

static const CliOption GEMMA_OPTIONS[] = {
    {"query-scale", "X", OPTION_FLOAT, CONFIG_FIELD(query_scale), 0, 1000000000,
     .help = "scores divided by sqrt(X): query_pre_attn_scalar (default:\n"
             "the head size)"},
    {"attn-softcap", "X", OPTION_FLOAT, CONFIG_FIELD(attn_softcap), 0, 1000000000,
     .help = "scores capped as tanh(s / X) * X (gemma2: 50; 0: none)"},
    {"final-softcap", "X", OPTION_FLOAT, CONFIG_FIELD(final_softcap), 0, 1000000000,
     .help = "logits capped the same way (gemma2: 30; 0: none)"},
    {"sliding-window", "N", OPTION_INT, CONFIG_FIELD(sliding_window), 0, 1 << 30,
     .help = "sliding layers see the last N positions (default 0: none;\n"
             "mistral and phi3 take it too, on every layer)"},
    {"sliding-pattern", "P", OPTION_INT, CONFIG_FIELD(sliding_pattern), 0, 1 << 20,
     .help = "layer l slides unless (l + 1) % P == 0 (gemma2: 2, gemma3:\n"
             "6; 0: every layer)"},
    {"rope-local-theta", "X", OPTION_FLOAT, CONFIG_FIELD(rope_local_theta), 0, 1000000000,
     .help = "the sliding layers' RoPE base (gemma3: 10000)"},
    CLI_OPTIONS_END};

static const CliOption MOE_OPTIONS[] = {
    {"experts", "E", OPTION_INT, CONFIG_FIELD(n_experts), 1, 4096,
     .help = "experts in each MoE layer (required)"},
    {"experts-used", "K", OPTION_INT, CONFIG_FIELD(n_experts_used), 1, 4096,
     .help = "the experts each token runs (default 2)"},
    {"expert-hidden", "H", OPTION_INT, CONFIG_FIELD(expert_hidden_dim), 1, 1 << 30,
     .help = "each expert's hidden width (qwen3moe; default --hidden)"},
    {"moe-step", "S", OPTION_INT, CONFIG_FIELD(moe_step), 1, 1 << 20,
     .help = "layer l is sparse when (l + 1) % S == 0 (qwen3moe; default 1)"},
    {"dense-layers", "L,..", OPTION_CUSTOM, .parse = parse_option, .id = OPT_DENSE_LAYERS,
     .help = "layers whose MLP stays dense, --hidden wide (qwen3moe)"},
    {"no-norm-topk", NULL, OPTION_UNSET, CONFIG_FIELD(expert_norm_topk),
     .help = "the k weights not renormalised (qwen3moe's norm_topk_prob false)"},
    CLI_OPTIONS_END};

static const CliOption PRESET_OPTIONS[] = {
    {"preset", "P", OPTION_CUSTOM, .parse = parse_option, .id = OPT_PRESET,
     .help = "smollm2-135m (HuggingFaceTB/SmolLM2-135M), qwen3-0.6b\n"
             "(Qwen/Qwen3-0.6B), llama-3.2-1b (meta-llama/Llama-3.2-1B),\n"
             "llama-3-8b (meta-llama/Meta-Llama-3-8B; 16 GB in bf16),\n"
             "tinyllama-1.1b (TinyLlama/TinyLlama-1.1B-Chat-v1.0), gpt2\n"
             "(openai-community/gpt2, 124M), gpt2-medium (355M), phi-3-mini-4k\n"
             "(microsoft/Phi-3-mini-4k-instruct), gemma-2-2b\n"
             "(google/gemma-2-2b), gemma-3-1b (google/gemma-3-1b-pt),\n"
             "mixtral-8x7b (mistralai/Mixtral-8x7B-v0.1; 93 GB in bf16) or\n"
             "qwen3-30b-a3b (Qwen/Qwen3-30B-A3B; 61 GB in bf16)"},
    CLI_OPTIONS_END};

static const CliOptionGroup MAKE_MODEL_GROUPS[] = {
    {.options = FOLDER_OPTIONS,
     .heading = "A Hugging Face model directory instead (docs/hf-models.md):"},
    {.options = GEMMA_OPTIONS, .heading = "Gemma's (--arch gemma2 or gemma3; docs/families.md):"},
    {.options = MOE_OPTIONS,
     .heading = "A mixture of experts (--arch mixtral or qwen3moe; docs/moe.md):"},
    {.options = PRESET_OPTIONS,
     .heading = "A real model's shape, from its published config.json (random weights; a\n"
                "folder unless --format llama2c, which only tinyllama-1.1b fits; options\n"
                "given beside it win, --seq-len 2048 say):"},
    {0}};

static const CliCommandOptions MAKE_MODEL_COMMAND = {.command = "make-model",
                                                     .usage = MAKE_MODEL_USAGE,
                                                     .options = SHAPE_OPTIONS,
                                                     .groups = MAKE_MODEL_GROUPS,
                                                     .after = MAKE_MODEL_AFTER};

int cli_make_model(int argc, char **argv) {
    /* Sizes start at 0 ("not given"); zero or negative values are refused by
     * config_validate with the name of the size. Gemma's numbers start
     * negative: not given (gemma_defaults) */
    MakeModelArgs args = {.c = {.query_scale = -1,
                                .attn_softcap = -1,
                                .final_softcap = -1,
                                .sliding_window = -1,
                                .sliding_pattern = -1,
                                .rope_local_theta = -1,
                                .expert_norm_topk = true},
                          .seed = 42,
                          .folder = {.arch = HF_LLAMA, .dtype = ST_F32, .shards = 1}};
    StepError err;
    int parsed = cli_options_parse(&MAKE_MODEL_COMMAND, argc, argv, &args, NULL, &err);
    if (parsed == 0) return 0;
    bool ok = parsed > 0;
    Config c = args.c;
    int seed = args.seed;
    bool untied = args.untied, arch_given = args.arch_given;
    const char *out = args.out;
    FolderOptions folder = args.folder;
    const ModelPreset *preset = args.preset;
    if (ok && preset != NULL) { /* a folder unless --format says otherwise */
        model_preset_apply(preset, &c, &untied);
        if (!arch_given) folder.arch = preset->arch;
        if (!folder.format_given) folder.hf = true;
        if (!folder.hf && !fits_llama2c(&c, folder.arch))
            ok = step_fail(&err,
                           "make-model: a llama2.c checkpoint cannot hold %s's head size, RoPE "
                           "or norm epsilon: use --format hf",
                           preset->name);
    }
    if (ok && !folder.hf) ok = file_check_output(out, "--out", &err);
    if (ok && !folder.hf &&
        (folder.shards > 1 || folder.tokenizer_from ||
         (preset == NULL && (c.head_dim != 0 || c.rope_theta != 0))))
        ok = step_fail(&err, "make-model: --head-dim, --rope-theta, --shards and --tokenizer-from "
                             "need --format hf");
    if (ok && folder.tokenizer_from != NULL) { /* it must load, and fit the vocabulary */
        Tokenizer tok;
        ok = tokenizer_load_json(&tok, folder.tokenizer_from, c.vocab_size, &err);
        if (ok) tokenizer_free(&tok);
    }
    bool gemma = folder.hf && (folder.arch == HF_GEMMA2 || folder.arch == HF_GEMMA3);
    /* Mistral's and Phi-3's windows slide on every layer */
    bool windowed = gemma || (folder.hf && (folder.arch == HF_MISTRAL || folder.arch == HF_PHI3));
    if (ok && !gemma && gemma_given(&c))
        ok = step_fail(&err, "make-model: --query-scale, --attn-softcap, --final-softcap, "
                             "--sliding-pattern and --rope-local-theta need --arch gemma2 or "
                             "gemma3");
    if (ok && !windowed && c.sliding_window > 0)
        ok = step_fail(&err, "make-model: --sliding-window needs --arch gemma2, gemma3, mistral or "
                             "phi3");
    int window = c.sliding_window > 0 ? c.sliding_window : 0;
    if (gemma)
        gemma_defaults(&c, folder.arch);
    else /* none of Gemma's; Mistral's or Phi-3's window on every layer */
        c.query_scale = c.attn_softcap = c.final_softcap = c.rope_local_theta = 0,
        c.sliding_window = window, c.sliding_pattern = 0;
    bool moe = folder.hf && (folder.arch == HF_MIXTRAL || folder.arch == HF_QWEN3MOE);
    bool moe_given = c.n_experts > 0 || c.n_experts_used > 0 || c.expert_hidden_dim > 0 ||
                     c.moe_step > 0 || c.n_dense_layers > 0 || !c.expert_norm_topk;
    if (ok && !moe && moe_given)
        ok = step_fail(&err, "make-model: --experts, --experts-used, --expert-hidden, --moe-step, "
                             "--dense-layers and --no-norm-topk need --arch mixtral or qwen3moe");
    if (ok && moe && c.n_experts == 0)
        ok = step_fail(&err, "make-model: --arch %s needs --experts E",
                       folder.arch == HF_MIXTRAL ? "mixtral" : "qwen3moe");
    if (ok && folder.arch == HF_MIXTRAL &&
        (c.moe_step > 1 || c.n_dense_layers > 0 || !c.expert_norm_topk ||
         (c.expert_hidden_dim > 0 && c.expert_hidden_dim != c.hidden_dim)))
        ok = step_fail(&err,
                       "make-model: Mixtral's experts are --hidden wide, every layer sparse and "
                       "renormalised: --expert-hidden, --moe-step, --dense-layers and "
                       "--no-norm-topk are Qwen3-MoE's");
    if (moe && c.n_experts_used == 0) c.n_experts_used = 2 < c.n_experts ? 2 : c.n_experts;
    if (moe && c.expert_hidden_dim == 0) c.expert_hidden_dim = c.hidden_dim;
    if (moe && c.moe_step == 0) c.moe_step = 1;
    if (!moe) c.expert_norm_topk = false;
    if (folder.hf) hf_architecture_apply(folder.arch, &c);
    if (ok && seed <= 0) ok = step_fail(&err, "make-model: --seed must be positive, got %d", seed);
    if (ok && c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
    c.shared_classifier = !untied;
    Model m = {0};
    /* a folder is written tensor by tensor, each drawn as it is written: an
     * 8B shape needs no 32 GB of float32 */
    if (ok && folder.hf)
        ok = model_reserve_layout(&m, &c, &err) &&
             hf_model_save_random(&m, (uint64_t)seed, folder.arch, out, folder.dtype, folder.shards,
                                  folder.tokenizer_from, &err);
    else if (ok)
        ok =
            model_init_random(&m, &c, (uint64_t)seed, &err) && model_save_checkpoint(&m, out, &err);
    model_free(&m);
    if (!ok) {
        cli_print_error(&err);
        return EXIT_BAD_INPUT;
    }
    fprintf(stderr, "wrote %s: %s, %llu parameters, %d layers, %d heads, %d KV heads\n", out,
            config_attention_kind(&c), (unsigned long long)config_param_count(&c), c.n_layers,
            c.n_heads, c.n_kv_heads);
    return 0;
}
