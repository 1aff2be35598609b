// The first-party plugin that starts another rule's run: a sub-run, which
// the execution log shows under the step that fired it. In AssemblyScript
// (plugins/build/fire.wasm; see publish/index.ts).
//
// Action `fire`, config:
//
//   rule:    the rule to run (required)
//   payload: a JSON object, the new run's trigger; strings may take values
//            from this run's trigger as in publish ("{{vehicle}}").
//            default: this run's trigger as it arrived.
//
// The new run's topic is "fire.<rule>"; its condition, mode and state apply
// as to any trigger. Its output is {"run": the new run's id}, and it needs the fire
// capability.

import {
  Action, Config, Event, Template, ValueKind, action, fail, fire, fireEvent, jsonTemplate,
  jsonString, lastStatus, plugin, setResult, statusText, templateError,
} from "../../sdk/assemblyscript/assembly";

export * from "../../sdk/assemblyscript/assembly/exports";

plugin("fire", "1.1.0");

class Fire extends Action {
  rule: string = "";
  payload: Template | null = null;

  configure(cfg: Config): string | null {
    let r = cfg.str("rule");
    if (r === null) return cfg.missing("rule", "a string");
    this.rule = r;
    if (cfg.has("payload")) {
      if (cfg.kind("payload") != ValueKind.Object) return "fire: config \"payload\" must be an object";
      this.payload = jsonTemplate(cfg, "payload");
      if (this.payload === null) return "fire: payload: " + templateError;
    }
    return null;
  }

  act(ev: Event): void {
    let p = this.payload;
    let id = p === null ? fireEvent(this.rule) : fire(this.rule, p.render(ev));
    if (id === null) {
      fail("fire " + this.rule + ": fire: " + statusText(lastStatus()));
      return;
    }
    setResult("{\"run\":" + jsonString(id) + "}");
  }
}

action("fire", (): Action => new Fire(), {
  doc: "start a run of another rule; the execution log shows it as a sub-run",
  example: `{"rule":"notify-owner","payload":{"vehicle":"{{vehicle}}"}}`,
  schema: `{"type":"object","required":["rule"],"properties":{"rule":{"type":"string"},"payload":{"type":"object"}}}`,
  needs: ["fire"],
});
