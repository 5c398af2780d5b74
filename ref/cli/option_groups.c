/* cli/option_groups.c: the option groups many commands share, as tables
 * (options.h): sampling, tracing and how the model runs. Each option parses
 * through the group's own function in common.c. */
#include <stddef.h>

#include "ref/cli/common.h"
#include "ref/cli/options.h"

/* One table entry's parser: the group's parse function for option `id`,
 * dest the group's struct. */
#define GROUP_PARSER(name, parse, type, id)                                                        \
    static bool name(const char *value, void *dest, StepError *err) {                              \
        return parse(id, value, (type *)dest, err) > 0;                                            \
    }

GROUP_PARSER(sampler_temperature, cli_sampler_option, SamplerParams, OPT_TEMPERATURE)
GROUP_PARSER(sampler_top_k, cli_sampler_option, SamplerParams, OPT_TOP_K)
GROUP_PARSER(sampler_top_p, cli_sampler_option, SamplerParams, OPT_TOP_P)
GROUP_PARSER(sampler_min_p, cli_sampler_option, SamplerParams, OPT_MIN_P)
GROUP_PARSER(sampler_seed, cli_sampler_option, SamplerParams, OPT_SEED)
GROUP_PARSER(sampler_order, cli_sampler_option, SamplerParams, OPT_SAMPLER_ORDER)
GROUP_PARSER(sampler_rng, cli_sampler_option, SamplerParams, OPT_RNG)

const CliOption CLI_TEMPERATURE_OPTIONS[] = {
    {"temperature", "T", OPTION_CUSTOM, .parse = sampler_temperature,
     .help = "divide the logits by T; 0 = greedy (argmax, no draw)"},
    CLI_OPTIONS_END};

const CliOption CLI_SAMPLER_OPTIONS[] = {
    {"top-k", "K", OPTION_CUSTOM, .parse = sampler_top_k,
     .help = "keep the K highest logits; 0 = off (default)"},
    {"top-p", "P", OPTION_CUSTOM, .parse = sampler_top_p,
     .help = "keep the smallest top set whose probability reaches P; 1 = off"},
    {"min-p", "M", OPTION_CUSTOM, .parse = sampler_min_p,
     .help = "keep tokens with probability >= M x the top one; 0 = off"},
    {"seed", "S", OPTION_CUSTOM, .parse = sampler_seed,
     .help = "seed of the random draw (default 42; not 0)"},
    {"sampler-order", "O", OPTION_CUSTOM, .parse = sampler_order,
     .help = "default|hf (T, top-k, top-p, min-p), llama.cpp (top-k, top-p,\n"
             "min-p, T) or vllm (T, min-p, top-k, top-p)"},
    {"rng", "NAME", OPTION_CUSTOM, .parse = sampler_rng,
     .help = "the generator: xorshift (llama2.c's xorshift*, the only one)"},
    CLI_OPTIONS_END};

GROUP_PARSER(trace_level, cli_trace_option, TraceOptions, OPT_TRACE_LEVEL)
GROUP_PARSER(trace_kv, cli_trace_option, TraceOptions, OPT_TRACE_KV)
GROUP_PARSER(trace_bpe, cli_trace_option, TraceOptions, OPT_TRACE_BPE)
GROUP_PARSER(trace_temperatures, cli_trace_option, TraceOptions, OPT_TRACE_TEMPERATURES)
GROUP_PARSER(trace_layers, cli_trace_option, TraceOptions, OPT_TRACE_LAYERS)
GROUP_PARSER(trace_positions, cli_trace_option, TraceOptions, OPT_TRACE_POSITIONS)
GROUP_PARSER(trace_hooks, cli_trace_option, TraceOptions, OPT_TRACE_HOOKS)
GROUP_PARSER(trace_no_hash, cli_trace_option, TraceOptions, OPT_NO_HASH)
GROUP_PARSER(trace_reproducible, cli_trace_option, TraceOptions, OPT_REPRODUCIBLE)

/* A flag of the group: parsed by the group's function with no value. */
#define GROUP_FLAG(name, parser)                                                                   \
    static bool name(const char *value, void *dest, StepError *err) {                              \
        (void)value;                                                                               \
        return parser(NULL, dest, err);                                                            \
    }
GROUP_FLAG(trace_bpe_flag, trace_bpe)
GROUP_FLAG(trace_no_hash_flag, trace_no_hash)
GROUP_FLAG(trace_reproducible_flag, trace_reproducible)

const CliOption CLI_TRACE_OPTIONS[] = {
    {"trace-level", "L", OPTION_CUSTOM, .parse = trace_level,
     .help = "summary|tokens|logits|sampling|layers|full (default sampling)"},
    {"trace-kv", "[=full]", OPTION_CUSTOM, .parse = trace_kv, .optional = true,
     .help = "add every KV-cache row written; =full also a snapshot of one\n"
             "layer's whole cache after each step"},
    {"trace-bpe", NULL, OPTION_CUSTOM, .parse = trace_bpe_flag,
     .help = "add each merge of the byte-pair encoder"},
    {"trace-temperatures", "T1,T2,...", OPTION_CUSTOM, .parse = trace_temperatures,
     .help = "add the full softmax at each temperature to every sample event"},
    {"trace-layers", "0,3", OPTION_CUSTOM, .parse = trace_layers, .help = "only these layers"},
    {"trace-positions", "5-9,12", OPTION_CUSTOM, .parse = trace_positions,
     .help = "only these positions"},
    {"trace-hooks", "PATTERNS", OPTION_CUSTOM, .parse = trace_hooks,
     .help = "only activations whose names match these globs,\n"
             "e.g. 'blocks.*.attn.pattern' (at any level)"},
    {"no-hash", NULL, OPTION_CUSTOM, .parse = trace_no_hash_flag,
     .help = "leave the model files' SHA-256 out of the run header (for big\n"
             "models: hashing reads every byte)"},
    {"reproducible", NULL, OPTION_CUSTOM, .parse = trace_reproducible_flag,
     .help = "leave out every measured figure (clock, memory), so that the\n"
             "same run writes the same bytes"},
    CLI_OPTIONS_END};

GROUP_PARSER(quant_weights, cli_quant_option, CliQuant, OPT_QUANT_WEIGHTS)
GROUP_PARSER(quant_activations, cli_quant_option, CliQuant, OPT_QUANT_ACTIVATIONS)
GROUP_PARSER(quant_kv, cli_quant_option, CliQuant, OPT_QUANT_KV)
GROUP_PARSER(quant_group, cli_quant_option, CliQuant, OPT_QUANT_GROUP)
GROUP_PARSER(quant_kernels, cli_quant_option, CliQuant, OPT_KERNELS)
GROUP_PARSER(quant_threads, cli_quant_option, CliQuant, OPT_THREADS)
GROUP_PARSER(quant_weights_mode, cli_quant_option, CliQuant, OPT_WEIGHTS)

const CliOption CLI_QUANT_OPTIONS[] = {
    {"quant-weights", "int8", OPTION_CUSTOM, .parse = quant_weights,
     .help = "every matrix and the embedding in int8 (norms stay float)"},
    {"quant-activations", "int8", OPTION_CUSTOM, .parse = quant_activations,
     .help = "quantize each matmul input on the fly"},
    {"quant-kv", "int8", OPTION_CUSTOM, .parse = quant_kv,
     .help = "store the KV cache in int8, one scale per position and head"},
    {"quant-group", "G", OPTION_CUSTOM, .parse = quant_group,
     .help = "values per scale (default 32; float32 everywhere by default)"},
    {"kernels", "K", OPTION_CUSTOM, .parse = quant_kernels,
     .help = "fast (default: packed weights, many sums at once) or plain\n"
             "(the row-by-row loop of docs/forward-pass.md); same bits"},
    {"threads", "N", OPTION_CUSTOM, .parse = quant_threads,
     .help = "threads the fast kernels split rows and heads over (default:\n"
             "every online processor; plain kernels use one); same bits"},
    {"weights", "W", OPTION_CUSTOM, .parse = quant_weights_mode,
     .help = "stored (default: matrices kept in the file's dtype, widened\n"
             "as read) or f32 (widened to float32 at load); same bits"},
    CLI_OPTIONS_END};
