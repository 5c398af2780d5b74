// Times llama.cpp (node-llama-cpp, CPU, 1 thread, F32 cache, no flash attention) on a GGUF:
// a prefill of the given ids, then `decode` greedy tokens one at a time. Prints JSON.
import {getLlama} from "node-llama-cpp";
const [path, nDecode] = [process.argv[2], Number(process.argv[3] || 128)];
const llama = await getLlama({gpu: false});
const model = await llama.loadModel({modelPath: path});
const ctx = await model.createContext({contextSize: 256, threads: 1, batchSize: 256, flashAttention: false,
                                       experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
const seq = ctx.getSequence();
const prompt = Array.from({length: 100}, (_, i) => (1 + 7919 * i) % 32000);
const t0 = performance.now();
const gen = seq.evaluate(prompt, {temperature: 0});
let n = 0, t1 = 0;
for await (const tok of gen) {
  if (n === 0) t1 = performance.now();
  if (++n >= nDecode + 1) break;
}
const t2 = performance.now();
console.log(JSON.stringify({llama_cpp: llama.llamaCppRelease ? llama.llamaCppRelease.release : "?",
  prefill_tok_s: 100 / ((t1 - t0) / 1000), decode_tok_s: nDecode / ((t2 - t1) / 1000)}));
await model.dispose();
