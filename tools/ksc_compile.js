// Compile a Kaitai Struct spec with the JavaScript build of kaitai-struct-compiler (npm package).
// Usage: node ksc_compile.js COMPILER_JS LANGUAGE[,LANGUAGE...] < spec.json > result.json
// The spec comes as JSON (a .ksy is YAML; the caller converts it, so no YAML package is needed here).  The result
// is {"version": ..., "results": {language: {"files": {name: text}} or {"error": message}}}; exit 0 unless the
// compiler itself cannot be loaded or the input is not JSON.
"use strict";
const fs = require("fs");
const compiler = require(process.argv[2]);
const languages = (process.argv[3] || "python").split(",");
const spec = JSON.parse(fs.readFileSync(0, "utf-8"));
(async () => {
  const results = {};
  for (const language of languages) {
    try {
      // the compiler may modify what it is given: each language gets a fresh copy
      results[language] = {files: await compiler.compile(language, JSON.parse(JSON.stringify(spec)), null, false)};
    } catch (err) {
      results[language] = {error: String((err && err.stack) || err).split("\n")[0]};
    }
  }
  process.stdout.write(JSON.stringify({version: compiler.version, results: results}));
})();
