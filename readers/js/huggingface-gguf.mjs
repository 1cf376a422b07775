// @huggingface/gguf: gguf(path, {typedMetadata, allowLocalFile}) -> keys with their types, tensor infos.
import { gguf } from "@huggingface/gguf";
import { main, VALUE_TYPES } from "./answer.mjs";

function entry(key, { value, type, subType }) {
  const out = { key, type: VALUE_TYPES[type] ?? type, value };
  if (type === 9) out.item_type = VALUE_TYPES[subType] ?? subType;
  return out;
}

main(async (path) => {
  const { typedMetadata, tensorInfos } = await gguf(path, { typedMetadata: true, allowLocalFile: true });
  const metadata = Object.entries(typedMetadata)
    .filter(([key]) => key !== "version" && key !== "tensor_count" && key !== "kv_count")
    .map(([key, v]) => entry(key, v));
  const tensors = tensorInfos.map((t) => ({ name: t.name, type: t.dtype, shape: t.shape, offset: t.offset }));
  return { metadata, tensors };
});
