// Builds every committed AssemblyScript module (scripts/modules.mjs) in
// place. Usage: npm run build
import { execFileSync } from "node:child_process";
import { asc, modules } from "./modules.mjs";

for (const m of modules) {
  execFileSync(process.execPath, [asc, m.entry, "--config", m.config, "-o", m.out], { cwd: m.cwd, stdio: "inherit" });
}
