// llama_cpp_engine.mjs: a real llama.cpp (node-llama-cpp's prebuilt binary, CPU) as a candidate
// engine for tests/llama_cpp_check.py and a peer for `make bench`.
//
//   node tests/llama_cpp_engine.mjs NPM_DIR candidates MODEL.gguf IDS TEXTS.json OUT
//       with the model loaded once: the raw next-token logits at every position of IDS
//       (comma-separated), teacher-forced in one controlledEvaluate call, as stepwise-logits-f32
//       candidates, OUT-f32.f32 (a float32 KV cache, flash attention off) and OUT-defaults.f32
//       (node-llama-cpp's own settings: an F16 cache, flash attention when it sees fit) and
//       OUT-f16.f32 (an F16 cache, flash attention off), each with its .json sidecar; and the ids of each text of the JSON list TEXTS (model.tokenize:
//       no BOS, special tokens as text)
//   node tests/llama_cpp_engine.mjs NPM_DIR decode MODEL.gguf IDS N_PROMPT CACHE OUT
//       with a CACHE (F16, BF16 or F32) KV cache, flash attention off: the first N_PROMPT ids of IDS
//       in one controlledEvaluate call (a prefill), then each later id in a call of its own (a
//       decode step against the cache), teacher-forced; the logits at every position as a
//       stepwise-logits-f32 candidate, OUT and OUT.json
//   node tests/llama_cpp_engine.mjs NPM_DIR time MODEL.gguf VOCAB PROMPT_TOKENS DECODE_TOKENS [CACHE [THREADS]]
//       prefill of PROMPT_TOKENS ids ((1 + 7919 i) mod VOCAB), then DECODE_TOKENS greedy ones, on
//       THREADS threads (default 1), warm (after one untimed prefill): tokens/s of each, and the
//       process's peak resident bytes; CACHE f32 (the default: F32 cache, no flash attention) or
//       defaults (node-llama-cpp's own: an F16 cache, flash attention when it sees fit)
//
// Each prints one JSON line that starts with the versions: llama.cpp's release and node-llama-cpp's.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [npmDir, command, modelPath, ...rest] = process.argv.slice(2);
const pkg = path.resolve(npmDir, "node_modules", "node-llama-cpp");
const {getLlama} = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const head = {llama_cpp: llama.llamaCppRelease.release, node_llama_cpp: version};
const float32 = {flashAttention: false, experimentalKvCacheKeyType: "F32",
                 experimentalKvCacheValueType: "F32"};

/* controlledEvaluate's results for ids, one row each, written as a
 * candidate (stepwise-logits-f32 and its sidecar); the vocabulary's size. */
function writeRows(ids, results, out) {
  const vocab = results[0].next.logits.size;
  const rows = new Float32Array(ids.length * vocab).fill(NaN);
  results.forEach((r, p) => { for (const [tok, v] of r.next.logits) rows[p * vocab + tok] = v; });
  fs.writeFileSync(out, Buffer.from(rows.buffer));
  fs.writeFileSync(out + ".json", JSON.stringify({format: "stepwise-logits-f32", vocab_size: vocab,
      positions: ids.length, first_pos: 0, token_ids: ids, values: "logits"}) + "\n");
  return vocab;
}

/* The logits of ids [positions, vocab] under context options `extra`, written as a candidate. */
async function writeLogits(ids, extra, out) {
  const ctx = await model.createContext({contextSize: 256, threads: 1, batchSize: 256, ...extra});
  const results = await ctx.getSequence().controlledEvaluate(
      ids.map(t => [t, {generateNext: {logits: true}}]));
  const vocab = writeRows(ids, results, out);
  const flash = ctx.flashAttention;
  await ctx.dispose();
  return {vocab, flash};
}

if (command === "candidates") {
  const [idsText, textsPath, out] = rest;
  const ids = idsText.split(",").map(Number);
  const f32 = await writeLogits(ids, float32, out + "-f32.f32");
  const dflt = await writeLogits(ids, {}, out + "-defaults.f32");
  await writeLogits(ids, {flashAttention: false, experimentalKvCacheKeyType: "F16",
                          experimentalKvCacheValueType: "F16"}, out + "-f16.f32");
  const texts = JSON.parse(fs.readFileSync(textsPath, "utf8"));
  console.log(JSON.stringify({...head, vocab: f32.vocab, flash_attention: dflt.flash,
                              ids: texts.map(t => Array.from(model.tokenize(t, false)))}));
} else if (command === "decode") {
  const [idsText, nPromptText, cache, out] = rest;
  const ids = idsText.split(",").map(Number), nPrompt = Number(nPromptText);
  if (!["F16", "BF16", "F32"].includes(cache)) throw new Error(`cache ${cache}: F16, BF16 or F32`);
  if (!(nPrompt >= 1 && nPrompt <= ids.length)) throw new Error(`n_prompt ${nPromptText}: 1 to ${ids.length}`);
  const ctx = await model.createContext({contextSize: 256, threads: 1, batchSize: 256, flashAttention: false,
                                         experimentalKvCacheKeyType: cache, experimentalKvCacheValueType: cache});
  const sequence = ctx.getSequence(), results = [];
  const step = async part => results.push(...await sequence.controlledEvaluate(
      part.map(t => [t, {generateNext: {logits: true}}])));
  await step(ids.slice(0, nPrompt));
  for (const t of ids.slice(nPrompt)) await step([t]);
  writeRows(ids, results, out);
  console.log(JSON.stringify({...head, cache, flash_attention: ctx.flashAttention, positions: ids.length}));
  await ctx.dispose();
} else if (command === "time") {
  const [vocab, nPrompt, nDecode] = rest.slice(0, 3).map(Number);
  const cache = rest[3] || "f32", threads = Number(rest[4] || 1);
  if (cache !== "f32" && cache !== "defaults") throw new Error(`cache ${cache}: f32 or defaults`);
  if (!(threads >= 1)) throw new Error(`threads ${rest[4]}: a count from 1`);
  const ctx = await model.createContext({contextSize: nPrompt + nDecode + 8, threads,
                                         batchSize: nPrompt, ...(cache === "f32" ? float32 : {})});
  const prompt = Array.from({length: nPrompt}, (_, i) => (1 + 7919 * i) % vocab);
  // warm, as stepwise's timings are: a first pass reads the mapped file's pages in
  const sequence = ctx.getSequence();
  for await (const tok of sequence.evaluate(prompt, {temperature: 0})) break;
  await sequence.clearHistory();
  const t0 = performance.now();
  let n = 0, t1 = 0;
  for await (const tok of sequence.evaluate(prompt, {temperature: 0})) {
    if (n === 0) t1 = performance.now();
    if (++n >= nDecode + 1) break;
  }
  const t2 = performance.now();
  console.log(JSON.stringify({...head, cache, threads, flash_attention: ctx.flashAttention,
                              prefill_tok_s: nPrompt / ((t1 - t0) / 1000),
                              decode_tok_s: nDecode / ((t2 - t1) / 1000),
                              peak_rss_bytes: process.resourceUsage().maxRSS * 1024}));
} else {
  console.error(`llama_cpp_engine.mjs: unknown command ${command}`);
  process.exitCode = 2;
}
await model.dispose();
