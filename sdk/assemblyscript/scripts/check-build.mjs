// Rebuilds every module into a temporary directory, twice, and checks that
// the two builds are byte-for-byte equal and equal to the committed build/.
// Usage: npm run check
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modules = {
  conformance: "conformance/assembly/index.ts",
  example: "example/assembly/index.ts",
};
const asc = join(root, "node_modules", "assemblyscript", "bin", "asc.js");

function build(out) {
  for (const [name, entry] of Object.entries(modules)) {
    execFileSync(process.execPath, [asc, entry, "--config", "asconfig.json", "-o", join(out, name + ".wasm")], {
      cwd: root,
      stdio: "inherit",
    });
  }
}

const a = mkdtempSync(join(tmpdir(), "ruled-as-a-"));
const b = mkdtempSync(join(tmpdir(), "ruled-as-b-"));
let bad = 0;
try {
  build(a);
  build(b);
  for (const name of Object.keys(modules)) {
    const x = readFileSync(join(a, name + ".wasm"));
    const y = readFileSync(join(b, name + ".wasm"));
    let committed = null;
    try {
      committed = readFileSync(join(root, "build", name + ".wasm"));
    } catch {}
    if (!x.equals(y)) {
      console.error(`${name}.wasm: two builds differ`);
      bad++;
    } else if (committed === null || !x.equals(committed)) {
      console.error(`${name}.wasm: build/ is out of date (run npm run build)`);
      bad++;
    } else {
      console.log(`${name}.wasm: ${x.length} bytes, reproducible, matches build/`);
    }
  }
} finally {
  rmSync(a, { recursive: true, force: true });
  rmSync(b, { recursive: true, force: true });
}
process.exit(bad ? 1 : 0);
