// @ruled/sdk-assemblyscript: write ruled plugins (ABI v1.1) in AssemblyScript.
//
// A plugin's entry file imports the API from here and re-exports the ABI
// exports:
//
//     import { Condition, Event, condition, plugin } from "@ruled/sdk-assemblyscript";
//     export * from "@ruled/sdk-assemblyscript/exports";

export { ValueKind, View, Config, Event, escapeKey, unescapeKey, compareCodePoints } from "./view";
export { Template, textTemplate, jsonTemplate, templateError, valueJSON, goFloat, floatText } from "./tmpl";
export {
  Info, Handler, Condition, Action, plugin, condition, action, fail, failPermanent, setResult, setResultBytes,
} from "./registry";
export {
  Level, Status, statusText, lastStatus, log, logTrace, logDebug, logInfo, logWarn, logError, now,
  eventRaw, eventRawBytes, publish, publishBytes, publishEvent,
  kvGet, kvGetBytes, kvSet, kvSetBytes, kvDelete, fire, fireEvent, http, Response,
} from "./host";
export { jsonString, jsonNumber } from "./json";
