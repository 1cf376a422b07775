// The answer protocol of the suite's runner (gguf-construct suite run --target cmd:...): read the file named on
// the command line; print one JSON object {"metadata": [...], "tensors": [...]} and exit 0 to accept, or print
// the reader's error on stderr and exit 1 to reject.  BigInt values are printed as exact JSON integers, and
// floats JSON cannot hold as "nan", "inf", "-inf".
const BIG = "\u0000big:";

function replacer(_key, v) {
  if (typeof v === "bigint") return BIG + v.toString();
  if (typeof v === "number" && !Number.isFinite(v)) return Number.isNaN(v) ? "nan" : v > 0 ? "inf" : "-inf";
  return v;
}

export function toJson(obj) {
  return JSON.stringify(obj, replacer).replace(/"\\u0000big:(-?\d+)"/g, "$1");
}

export async function main(read) {
  const path = process.argv[2];
  let answer;
  try {
    answer = await read(path);
  } catch (err) {
    process.stderr.write(`${err && err.name}: ${err && err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(toJson(answer) + "\n");
}

export const VALUE_TYPES = ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING",
  "ARRAY", "UINT64", "INT64", "FLOAT64"];
