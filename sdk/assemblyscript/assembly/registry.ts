// What a plugin is made of: named conditions and actions, each a class the
// SDK instantiates once per configured step.

import { Config, Event } from "./view";

/** Describes a function for the describe document (ABI.md §5). Every field is optional. */
export class Info {
  /** One line on what the function does. */
  doc: string = "";
  /** A config that configures, as JSON, e.g. `{"below":20}`. */
  example: string = "";
  /** A JSON Schema for the config, as JSON. */
  schema: string = "";
  /** The capabilities the function uses: "publish", "kv", "fire", "http". */
  needs: string[] = [];
}

/**
 * The base of conditions and actions. configure() runs once per step config
 * (per instance of the module), on a new object made by the factory given at
 * registration; the object is then kept under a handle until released.
 */
export abstract class Handler {
  /** @internal 1 condition, 2 action */
  __kind: u8 = 0;

  /**
   * Reads the step's config and keeps what the calls need. Answer null to
   * accept it, or the reason to refuse it (the step then fails to configure
   * with StatusBadConfig); see Config.missing(). The default accepts any
   * config.
   */
  configure(cfg: Config): string | null {
    return null;
  }
}

/** A condition: decides whether an event matches. */
export abstract class Condition extends Handler {
  /**
   * Answers whether the event meets the condition. To fail instead (an
   * error, not "not met"), `return fail("why")`. Conditions may log, read
   * now() (the event's time) and the event's JSON, and nothing else.
   */
  abstract when(ev: Event): bool;
}

/** An action: does something with an event. */
export abstract class Action extends Handler {
  /**
   * Runs the action. Produce a result with setResult(); fail with
   * `fail("why")`. Actions run at least once: use ev.key to make a repeated
   * effect harmless.
   */
  abstract act(ev: Event): void;
}

/** @internal */
export const KIND_CONDITION: u8 = 1;
/** @internal */
export const KIND_ACTION: u8 = 2;

/** @internal */
export class Registration {
  constructor(
    public name: string,
    public kind: u8,
    public condition: (() => Condition) | null,
    public action: (() => Action) | null,
    public info: Info,
  ) {}
}

/** @internal */
export const registry = new Array<Registration>();
/** @internal */
export let pluginName: string = "";
/** @internal */
export let pluginVersion: string = "";
/** @internal set when the describe document must be built again */
export let describeDirty: bool = true;

/** Names the plugin and its version in the describe document. Call it once, at top level. */
export function plugin(name: string, version: string = ""): void {
  pluginName = name;
  pluginVersion = version;
  describeDirty = true;
}

function register(r: Registration): void {
  for (let i = 0, n = registry.length; i < n; i++) {
    if (registry[i].name == r.name) {
      abort("ruled: function \"" + r.name + "\" registered twice");
    }
  }
  registry.push(r);
  describeDirty = true;
}

/**
 * Registers the condition `name`: `factory` makes a new instance for each
 * configured step. Call it at top level of the plugin's entry file:
 *
 *     condition("low", (): Condition => new Low(), { doc: "battery below a level", example: `{"below":20}` });
 */
export function condition(name: string, factory: () => Condition, info: Info | null = null): void {
  register(new Registration(name, KIND_CONDITION, factory, null, info ? info : new Info()));
}

/** Registers the action `name`; see condition(). List the capabilities it uses in `info.needs`. */
export function action(name: string, factory: () => Action, info: Info | null = null): void {
  register(new Registration(name, KIND_ACTION, null, factory, info ? info : new Info()));
}

// The outcome of the current call.

/** @internal */
export let failed: bool = false;
/** @internal text of the last error */
export let errorText: string = "";
/** @internal UTF-8 of errorText, made when the host asks */
export let errorBytes: ArrayBuffer | null = null;
/** @internal the result of the current action */
export let result: ArrayBuffer | null = null;

/** @internal */
export function setError(text: string): void {
  errorText = text;
  errorBytes = null;
}

/**
 * Fails the current call with `text`: ruled_when/ruled_act answer
 * StatusError (configure: StatusBadConfig) and the host reads the text.
 * Answers false, so a condition can `return fail("...")`; an action calls it
 * and returns.
 */
export function fail(text: string): bool {
  failed = true;
  setError(text);
  return false;
}

/** @internal the current action failed with failPermanent() */
export let permanent: bool = false;

/**
 * Fails the current action with `text`, saying that trying again would fail
 * the same way (a request the far end refused as invalid): ruled_act answers
 * StatusPermanent and the host does not retry the step, whatever its rule's
 * `retry:` says (ABI 1.2). In a condition it is fail().
 */
export function failPermanent(text: string): bool {
  permanent = true;
  return fail(text);
}

/** Sets the current action's result to `text` (as UTF-8). The last call wins. */
export function setResult(text: string): void {
  result = String.UTF8.encode(text);
}

/** Sets the current action's result to `data`, which the SDK keeps (do not change it afterwards). */
export function setResultBytes(data: ArrayBuffer): void {
  result = data;
}
