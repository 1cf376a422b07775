// hyllama: ggufMetadata(arrayBuffer) over the whole file -> keys (no types), tensor infos.
import { readFileSync } from "node:fs";
import { ggufMetadata } from "hyllama";
import { main } from "./answer.mjs";

main(async (path) => {
  const buf = readFileSync(path);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  const { metadata, tensorInfos } = ggufMetadata(ab);
  const keys = Object.entries(metadata)
    .filter(([key]) => key !== "version" && key !== "tensorCount" && key !== "metadataKVCount")
    .map(([key, value]) => ({ key, value }));
  const tensors = tensorInfos.map((t) => ({ name: t.name, type: t.type, shape: t.shape, offset: t.offset }));
  return { metadata: keys, tensors };
});
