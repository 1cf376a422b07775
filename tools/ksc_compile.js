// Compile a Kaitai Struct spec with the JavaScript build of kaitai-struct-compiler (npm package).
// Usage: node ksc_compile.js COMPILER_JS LANGUAGE < spec.json > files.json
// The spec comes as JSON (a .ksy is YAML; the caller converts it, so no YAML package is needed here);
// the result is a JSON object mapping each generated file name to its text.  Errors go to stderr, exit 1.
"use strict";
const fs = require("fs");
const compiler = require(process.argv[2]);
const language = process.argv[3] || "python";
const spec = JSON.parse(fs.readFileSync(0, "utf-8"));
compiler.compile(language, spec, null, false).then(
  (files) => { process.stdout.write(JSON.stringify({version: compiler.version, files: files})); },
  (err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
