// The ABI exports, for a plugin's entry file to re-export:
//
//     export * from "@ruled/sdk-assemblyscript/exports";
export * from "./assembly/exports";
