// The first-party plugin that writes to the daemon's log, in
// AssemblyScript (plugins/build/log.wasm; see publish/index.ts).
//
// Action `log`, config:
//
//   message: the line, with {{path}} placeholders filled from the trigger
//            event (required)
//   level:   trace, debug, info, warn or error. default: info.
//
// It answers the line it wrote, and needs no capability.

import {
  Action, Config, Event, Level, Template, action, log, plugin, setResult, templateError, textTemplate,
} from "../../sdk/assemblyscript/assembly";

export * from "../../sdk/assemblyscript/assembly/exports";

plugin("log", "1.1.0");

const levelNames = ["trace", "debug", "info", "warn", "error"];

class Log extends Action {
  message: Template | null = null;
  level: Level = Level.Info;

  configure(cfg: Config): string | null {
    let m = cfg.str("message");
    if (m === null) return cfg.missing("message", "a string");
    this.message = textTemplate(m);
    if (this.message === null) return "log: message: " + templateError;
    let name = cfg.strOr("level", "info");
    let i = levelNames.indexOf(name);
    if (i < 0) return "log: level \"" + name + "\" is not one of trace, debug, info, warn, error";
    this.level = <Level>i;
    return null;
  }

  act(ev: Event): void {
    let line = this.message!.render(ev);
    log(this.level, line);
    setResult(line);
  }
}

action("log", (): Action => new Log(), {
  doc: "write a line to the daemon's log",
  example: `{"level":"warn","message":"battery {{battery}}% on {{vehicle}}"}`,
  schema: `{"type":"object","required":["message"],"properties":{"message":{"type":"string"},"level":{"enum":["trace","debug","info","warn","error"]}}}`,
});
