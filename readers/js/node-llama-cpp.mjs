// node-llama-cpp's own GGUF reader: readGgufFileInfo(path, {readTensorInfo}) -> nested metadata (no types),
// tensor infos.  Keys are flattened back to their dotted names.
import { readGgufFileInfo } from "node-llama-cpp";
import { main } from "./answer.mjs";

function flatten(obj, prefix, out) {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v, key, out);
    else out.push({ key, value: v });
  }
  return out;
}

main(async (path) => {
  const info = await readGgufFileInfo(path, { readTensorInfo: true, logWarnings: false, spliceSplitFiles: false,
    sourceType: "filesystem" });
  const tensors = (info.fullTensorInfo ?? info.tensorInfo ?? []).map((t) => ({ name: t.name, type: t.ggmlType,
    shape: t.dimensions, offset: t.offset }));
  return { metadata: flatten(info.metadata ?? {}, "", []), tensors };
});
