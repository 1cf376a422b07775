// Read GGUF files with the JavaScript parser kaitai-struct-compiler made of exports/gguf.ksy and print what it
// sees as JSON (one object per file): version, byte order, ALIGNMENT, keys with typed values, tensor infos with a
// SHA-256 of each tensor's data.  Needs the npm package kaitai-struct (the runtime) on NODE_PATH.
// Usage: node kaitai_js_dump.js GGUF_JS FILE...
"use strict";
const fs = require("fs");
const crypto = require("crypto");
const KaitaiStream = require("kaitai-struct/KaitaiStream");
const mod = require(require("path").resolve(process.argv[2]));
const Gguf = mod.Gguf || mod;
const STRING = Gguf.ValueTypes.STRING, ARRAY = Gguf.ValueTypes.ARRAY;

function value(type, v) {
  if (type === STRING) return v.data;
  if (type === ARRAY) return [v.type, v.data.map((x) => value(v.type, x))];
  return v;
}

const out = process.argv.slice(3).map((file) => {
  const k = new Gguf(new KaitaiStream(fs.readFileSync(file)));
  const head = k.fileHead;
  return {
    version: head.header.version, byte_order: k.bigEndian ? "big" : "little", alignment: k.alignment,
    keys: head.metadataKv.map((kv) => [kv.key.data, kv.valueType, value(kv.valueType, kv.value)]),
    tensors: head.tensorInfos.map((t) => [t.name.data, t.dimensions, t.type, t.offset, t.nBytes,
      crypto.createHash("sha256").update(t.data).digest("hex")]),
  };
});
process.stdout.write(JSON.stringify(out));
