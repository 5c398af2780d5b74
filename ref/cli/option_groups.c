/* cli/option_groups.c: the option groups many commands share, as tables
 * (options.h): sampling, tracing and how the model runs. Each option parses
 * through the group's own function in common.c, by its id. */
#include <stddef.h>

#include "ref/cli/common.h"
#include "ref/cli/options.h"
#include "ref/text/chat.h"

/* The sampler's numbers are any finite ones here (OPTION_FLOAT's range
 * 0, 0): sampler_params_validate checks their ranges, for the library's
 * callers too.
 *
 * Each group's parse function: the group's own (common.c) for the
 * option's id, dest the group's struct. */
static bool sampler_option(const CliOption *o, const char *value, void *dest, StepError *err) {
    return cli_sampler_option(o->id, value, dest, err) > 0;
}
static bool trace_option(const CliOption *o, const char *value, void *dest, StepError *err) {
    return cli_trace_option(o->id, value, dest, err) > 0;
}
static bool quant_option(const CliOption *o, const char *value, void *dest, StepError *err) {
    return cli_quant_option(o->id, value, dest, err) > 0;
}

bool cli_option_chat_template(const CliOption *o, const char *value, void *dest, StepError *err) {
    (void)o;
    return chat_template_parse(value, dest, err);
}

const CliOption CLI_TEMPERATURE_OPTIONS[] = {
    {"temperature", "T", OPTION_FLOAT, offsetof(SamplerParams, temperature),
     .help = "divide the logits by T; 0 = greedy (argmax, no draw)"},
    CLI_OPTIONS_END};

const CliOption CLI_SAMPLER_OPTIONS[] = {
    {"top-k", "K", OPTION_INT, offsetof(SamplerParams, top_k), -(1L << 30), 1L << 30,
     .help = "keep the K highest logits; 0 = off (default)"},
    {"top-p", "P", OPTION_FLOAT, offsetof(SamplerParams, top_p),
     .help = "keep the smallest top set whose probability reaches P; 1 = off"},
    {"min-p", "M", OPTION_FLOAT, offsetof(SamplerParams, min_p),
     .help = "keep tokens with probability >= M x the top one; 0 = off"},
    {"seed", "S", OPTION_CUSTOM, .parse = sampler_option, .id = OPT_SEED,
     .help = "seed of the random draw (default 42; not 0)"},
    {"sampler-order", "O", OPTION_CUSTOM, .parse = sampler_option, .id = OPT_SAMPLER_ORDER,
     .help = "default|hf (T, top-k, top-p, min-p), llama.cpp (top-k, top-p,\n"
             "min-p, T) or vllm (T, min-p, top-k, top-p)"},
    {"rng", "NAME", OPTION_CUSTOM, .parse = sampler_option, .id = OPT_RNG,
     .help = "the generator: xorshift (llama2.c's xorshift*, the only one)"},
    CLI_OPTIONS_END};

const CliOption CLI_TRACE_OPTIONS[] = {
    {"trace-level", "L", OPTION_CUSTOM, .parse = trace_option, .id = OPT_TRACE_LEVEL,
     .help = "summary|tokens|logits|sampling|layers|full (default sampling)"},
    {"trace-kv", "[=full]", OPTION_CUSTOM, .parse = trace_option, .id = OPT_TRACE_KV,
     .optional = true,
     .help = "add every KV-cache row written; =full also a snapshot of one\n"
             "layer's whole cache after each step"},
    {"trace-bpe", NULL, OPTION_FLAG, offsetof(TraceOptions, bpe),
     .help = "add each merge of the byte-pair encoder"},
    {"trace-temperatures", "T1,T2,...", OPTION_CUSTOM, .parse = trace_option,
     .id = OPT_TRACE_TEMPERATURES,
     .help = "add the full softmax at each temperature to every sample event"},
    {"trace-layers", "0,3", OPTION_CUSTOM, .parse = trace_option, .id = OPT_TRACE_LAYERS,
     .help = "only these layers"},
    {"trace-positions", "5-9,12", OPTION_CUSTOM, .parse = trace_option, .id = OPT_TRACE_POSITIONS,
     .help = "only these positions"},
    {"trace-hooks", "PATTERNS", OPTION_CUSTOM, .parse = trace_option, .id = OPT_TRACE_HOOKS,
     .help = "only activations whose names match these globs,\n"
             "e.g. 'blocks.*.attn.pattern' (at any level)"},
    {"no-hash", NULL, OPTION_FLAG, offsetof(TraceOptions, no_hash),
     .help = "leave the model files' SHA-256 out of the run header (for big\n"
             "models: hashing reads every byte)"},
    {"reproducible", NULL, OPTION_FLAG, offsetof(TraceOptions, reproducible),
     .help = "leave out every measured figure (clock, memory), so that the\n"
             "same run writes the same bytes"},
    CLI_OPTIONS_END};

const CliOption CLI_MODEL_OPTIONS[] = {
    {"model", "M", OPTION_TEXT, offsetof(CliModelRun, model), .path = PATH_IN,
     .help = "a llama2.c checkpoint (.bin), an int8 .q8 file, a GGUF file\n"
             "(.gguf, its own tokenizer), a Hugging Face folder (its\n"
             "tokenizer.json) or a stepwise JSON model (.json); default:\n"
             "the built-in tiny model (data/tiny-model.json)"},
    {"tokenizer", "T", OPTION_TEXT, offsetof(CliModelRun, tokenizer), .path = PATH_IN,
     .help = "a llama2.c tokenizer.bin, a tokenizer.json or a folder\n"
             "holding one, or a JSON model whose tokenizer to use\n"
             "(required for a checkpoint; wins over the model's own)"},
    CLI_OPTIONS_END};

const CliOption CLI_QUANT_OPTIONS[] = {
    {"quant-weights", "int8", OPTION_CUSTOM, .parse = quant_option, .id = OPT_QUANT_WEIGHTS,
     .help = "every matrix and the embedding in int8 (norms stay float)"},
    {"quant-activations", "int8", OPTION_CUSTOM, .parse = quant_option, .id = OPT_QUANT_ACTIVATIONS,
     .help = "quantize each matmul input on the fly"},
    {"quant-kv", "int8", OPTION_CUSTOM, .parse = quant_option, .id = OPT_QUANT_KV,
     .help = "store the KV cache in int8, one scale per position and head"},
    {"quant-group", "G", OPTION_CUSTOM, .parse = quant_option, .id = OPT_QUANT_GROUP,
     .help = "values per scale (default 32; float32 everywhere by default)"},
    {"kernels", "K", OPTION_CUSTOM, .parse = quant_option, .id = OPT_KERNELS,
     .help = "fast (default: packed weights, many sums at once) or plain\n"
             "(the row-by-row loop of docs/forward-pass.md); same bits"},
    {"threads", "N", OPTION_CUSTOM, .parse = quant_option, .id = OPT_THREADS,
     .help = "threads the fast kernels split rows and heads over (default:\n"
             "every online processor; plain kernels use one); same bits"},
    {"weights", "W", OPTION_CUSTOM, .parse = quant_option, .id = OPT_WEIGHTS,
     .help = "stored (default: matrices kept in the file's dtype, widened\n"
             "as read) or f32 (widened to float32 at load); same bits"},
    {"mla", "FORM", OPTION_CUSTOM, .parse = quant_option, .id = OPT_MLA,
     .help = "multi-head latent attention (DeepSeek-V2): rebuilt (default:\n"
             "each head's keys and values rebuilt from the cached latents)\n"
             "or absorbed (kv_b folded into the query and the output);\n"
             "within rounding of each other (docs/attention-variants.md)"},
    {"kv-dtype", "T", OPTION_CUSTOM, .parse = quant_option, .id = OPT_KV_DTYPE,
     .help = "f32 (default), f16 or bf16: K and V rounded as an engine's\n"
             "cache of that type holds them: 16 bits a value, widened a\n"
             "layer at a time for attention; docs/oracle.md"},
    {"kv-rounding", "R", OPTION_CUSTOM, .parse = quant_option, .id = OPT_KV_ROUNDING,
     .help = "none (default) or llama.cpp: with --kv-dtype f16, also the\n"
             "query rounded to float16 for K.Q and the probabilities before\n"
             "they weight V, as llama.cpp's float16 cache rounds them"},
    {"gelu", "G", OPTION_CUSTOM, .parse = quant_option, .id = OPT_GELU,
     .help = "exact (default: GELU's tanh form in float32) or ggml (through\n"
             "ggml's float16 table, as llama.cpp computes it: for comparing\n"
             "with llama.cpp's GPT-2 and Gemma; docs/oracle.md)"},
    CLI_OPTIONS_END};
