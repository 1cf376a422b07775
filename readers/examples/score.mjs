// Score any GGUF reader on the suite with nothing but node: node score.mjs SUITE_DIR PROFILE READER [ARGS...]
// READER is a command that gets a case's path as its last argument (exit 0 = accept, 1-127 = reject, a signal or
// 128+ = crash, 30 s = hang), or a JavaScript module (.mjs/.js) whose default export, a function of the path,
// returns to accept and throws to reject (run in this process: ten times faster, but a crash or a hang in it ends
// the run).  If the reader prints (or returns) {"metadata": [{"key", "value"}]}, plain keys' values are compared.
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, profile, reader, ...args] = process.argv.slice(2);
const { cases } = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
const read = /\.[cm]?js$/.test(reader) && (await import(pathToFileURL(resolve(reader)))).default;
const plain = (a) => a && JSON.parse(JSON.stringify(a, (k, v) => (typeof v === "bigint" ? Number(v) : v)));
const tally = {};
for (const c of cases) {
  let got, answer;
  if (read) {
    try { answer = plain(await read(join(dir, c.file))); got = "accept"; } catch { got = "reject"; }
  } else {
    const r = spawnSync(reader, [...args, join(dir, c.file)], { timeout: 30000, encoding: "utf8" });
    got = r.error ? "hang" : r.signal || r.status >= 128 ? "crash" : r.status === 0 ? "accept" : "reject";
    if (got === "accept" && r.stdout.trim().startsWith("{")) answer = JSON.parse(r.stdout);
  }
  const want = c.expect[profile];
  let verdict = got === "crash" || got === "hang" ? got : want === "either" || want === got ? "pass" : `false-${got}`;
  if (verdict === "pass" && c.metadata && Array.isArray(answer?.metadata)) {
    const theirs = new Map(answer.metadata.map((m) => [m.key, JSON.stringify(m.value)]));
    const wrong = c.metadata.filter((m) => "value" in m && !["ARRAY", "FLOAT32", "FLOAT64"].includes(m.type)
      && theirs.get(m.key) !== JSON.stringify(m.value));
    if (wrong.length) verdict = "wrong-values";
  }
  tally[verdict] = (tally[verdict] ?? 0) + 1;
  if (verdict !== "pass") console.log(`${verdict}\t${c.file}\t(expected ${want})`);
}
console.log(JSON.stringify(tally));
