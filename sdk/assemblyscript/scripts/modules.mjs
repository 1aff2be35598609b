// Every AssemblyScript module the repository commits, built by
// `npm run build` (scripts/build.mjs) and checked by `npm run check`
// (scripts/check-build.mjs): entry file, config and output, relative to the
// repository's root. The SDK's own modules compile from the SDK's directory
// (their `use` paths are "assembly/abort/…"); the first-party plugins from
// the root, with plugins/asconfig.json.
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const sdk = join(dirname(fileURLToPath(import.meta.url)), "..");
export const root = join(sdk, "..", "..");
export const asc = join(sdk, "node_modules", "assemblyscript", "bin", "asc.js");

const inSDK = (name, entry) => ({
  name, cwd: sdk, entry, config: "asconfig.json", out: join(sdk, "build", name + ".wasm"),
});
const plugin = (name, entry) => ({
  name, cwd: root, entry, config: "plugins/asconfig.json", out: join(root, "plugins", "build", name + ".wasm"),
});

export const modules = [
  inSDK("conformance", "conformance/assembly/index.ts"),
  inSDK("example", "example/assembly/index.ts"),
  plugin("expr", "plugins/expr/index.ts"),
  plugin("publish", "plugins/publish/index.ts"),
  plugin("log", "plugins/log/index.ts"),
  plugin("fire", "plugins/fire/index.ts"),
  plugin("http", "plugins/http/index.ts"),
  { ...plugin("scooter", "examples/scooter/plugin/index.ts"), out: join(root, "examples", "scooter", "plugin", "scooter.wasm") },
];
