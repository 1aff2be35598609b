// Rebuilds every module (scripts/modules.mjs) into a temporary directory, twice, and checks that
// the two builds are byte-for-byte equal and equal to the committed build/.
// Usage: npm run check
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asc, modules } from "./modules.mjs";

function build(out) {
  for (const m of modules) {
    execFileSync(process.execPath, [asc, m.entry, "--config", m.config, "-o", join(out, m.name + ".wasm")], {
      cwd: m.cwd,
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
  for (const { name, out } of modules) {
    const x = readFileSync(join(a, name + ".wasm"));
    const y = readFileSync(join(b, name + ".wasm"));
    let committed = null;
    try {
      committed = readFileSync(out);
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
