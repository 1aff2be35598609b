// The package's entry for `import { ... } from "@ruled/sdk-assemblyscript"`
// (asc resolves a bare package import to <package>/index.ts). The API is in
// assembly/.
export * from "./assembly/index";
