import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { OperatorActionSent } from "@mosoo/contracts/operator-routes";
import { act, call, type ApiFailure } from "./api.js";
import type { EffectDetail } from "./types.js";

/** The operator's four actions on an effect. */
type Action = "lookup" | "succeeded" | "not_executed" | "compensate";

const TITLES: Record<Action, string> = {
  lookup: "Look up now",
  succeeded: "Resolve as succeeded",
  not_executed: "Resolve as not executed",
  compensate: "Request a compensation",
};

/** What each action does, in words, naming the effect: shown in its confirmation. */
function consequence(action: Action, e: EffectDetail): string {
  switch (action) {
    case "lookup":
      return `The runtime asks the adapter bound to ${e.serverId} whether effect ${e.id} (${e.toolName}) happened. If the provider proves the outcome, the effect is settled and its command and run get the answer; otherwise it stays unknown. Nothing is sent to the provider as a write.`;
    case "succeeded":
      return `Effect ${e.id} (${e.toolName} on ${e.serverId}) is marked succeeded with the result below, as if the provider's answer had arrived: its command and run get this result, and the write is never sent again. Only do this after checking at the provider that the write happened.`;
    case "not_executed":
      return `Effect ${e.id} (${e.toolName} on ${e.serverId}) is marked not executed: the agent is told the write did not happen and may send it again as a new tool call. If it did happen after all, that would make a second write.`;
    case "compensate":
      return `A new write is sent to ${e.serverId} to undo effect ${e.id} (${e.toolName}), with its own idempotency key, through the compensating action its adapter declares. It cannot be taken back.`;
  }
}

/** A lookup answer's why, ` (reason code: error)`, from the parts it has; empty when it has neither (a confirmed outcome). */
function lookupWhy(answer: { reasonCode?: string | null; error?: string | null }): string {
  const why = [answer.reasonCode, answer.error].filter((v): v is string => typeof v === "string" && v !== "");
  return why.length > 0 ? ` (${why.join(": ")})` : "";
}

/**
 * A refusal, in words. When the effect is no longer what the operator saw (someone else settled
 * or changed it first: `effect.not_unknown` and the like), say so plainly, with its state now.
 */
function explain(f: ApiFailure, seen: EffectDetail, now: EffectDetail | null): string {
  if (now && (now.status !== seen.status || now.version !== seen.version) && f.status === 409) {
    return `Someone else settled this effect first: it is now ${now.status}${now.resolution ? ` (resolution: ${now.resolution})` : ""}. Your request changed nothing. (${f.code}: ${f.message})`;
  }
  return `Refused, nothing changed: ${f.code}: ${f.message}`;
}

/**
 * The actions that fit the effect's status (lookup and both resolutions while `unknown`, a
 * compensation once `succeeded`), each opening a confirmation dialog that names the effect and
 * the consequence. The dialog stays open across live updates, so a stale confirmation is sent
 * and its refusal shown.
 */
export function ActionsPanel({ effect, onDone }: { effect: EffectDetail; onDone: () => void }) {
  const [pending, setPending] = useState<{ action: Action; snapshot: EffectDetail } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const canAct = effect.status === "unknown" || effect.status === "succeeded";
  return html`<section aria-labelledby="actions-h" class="actions">
    <h2 id="actions-h">Actions</h2>
    ${notice ? html`<p class="notice" role="status" data-testid="notice">${notice}</p>` : null}
    ${!canAct ? html`<p>No operator action applies to a ${effect.status} effect.</p>` : null}
    <div class="action-buttons">
      ${
        effect.status === "unknown"
          ? html`<button type="button" onClick=${() => setPending({ action: "lookup", snapshot: effect })}>${TITLES.lookup}</button>
              <button type="button" onClick=${() => setPending({ action: "succeeded", snapshot: effect })}>${TITLES.succeeded}…</button>
              <button type="button" onClick=${() => setPending({ action: "not_executed", snapshot: effect })}>
                ${TITLES.not_executed}…
              </button>`
          : null
      }
      ${effect.status === "succeeded" ? html`<button type="button" onClick=${() => setPending({ action: "compensate", snapshot: effect })}>${TITLES.compensate}…</button>` : null}
    </div>
    ${
      pending
        ? html`<${ConfirmDialog}
            action=${pending.action}
            effect=${pending.snapshot}
            current=${effect}
            onClose=${(message: string | null) => {
              setPending(null);
              if (message) {
                setNotice(message);
                onDone();
              }
            }}
          />`
        : null
    }
  </section>`;
}

const DEFAULT_RESULT = JSON.stringify({ content: [{ type: "text", text: "" }] }, null, 2);

/** The confirmation: the consequence, the inputs the action needs (reason; result and operation id for `succeeded`), Confirm / Cancel. */
function ConfirmDialog({
  action,
  effect,
  current,
  onClose,
}: {
  action: Action;
  effect: EffectDetail;
  current: EffectDetail;
  onClose: (message: string | null) => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [settledElsewhere, setSettledElsewhere] = useState(false);
  useEffect(() => {
    ref.current?.showModal();
  }, []);

  const submit = async (ev: Event) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget as HTMLFormElement);
    const reason = String(form.get("reason") ?? "").trim();
    if (!reason) return setError("Give a reason: it is recorded in the audit trail.");
    const params = { effectId: effect.id };
    let sent: Promise<{ ok: true; what: string } | ApiFailure>;
    if (action === "lookup") {
      sent = act("reconcile", effect.id, { reason }).then((r) =>
        r.ok
          ? {
              ok: true,
              what: `Lookup done: ${r.data.outcome}${lookupWhy(r.data)}${r.data.effect ? `; the effect is ${r.data.effect.status}` : ""}.`,
            }
          : r,
      );
    } else if (action === "compensate") {
      sent = act("compensate", effect.id, { reason }).then((r) =>
        r.ok ? { ok: true, what: `Compensation requested for effect ${effect.id}.` } : r,
      );
    } else {
      let body: OperatorActionSent<"resolve">;
      if (action === "not_executed") body = { outcome: "not_executed", reason };
      else {
        let result: unknown;
        try {
          result = JSON.parse(String(form.get("result") ?? ""));
        } catch {
          return setError("The result is not JSON: paste the MCP tool result the provider returned.");
        }
        const operationId = String(form.get("operationId") ?? "").trim();
        body = {
          outcome: "succeeded",
          // the operator's JSON as pasted: the API checks it is an MCP tool result (400 request.invalid otherwise)
          result: result as Record<string, unknown>,
          reason,
          ...(operationId ? { receipt: { providerOperationId: operationId, observedAt: new Date().toISOString() } } : {}),
        };
      }
      sent = act("resolve", effect.id, body).then((r) => (r.ok ? { ok: true, what: `Effect ${effect.id} resolved as ${action}.` } : r));
    }
    setBusy(true);
    const r = await sent;
    setBusy(false);
    if (!r.ok) {
      const now = await call("consoleShow", { params });
      const message = explain(r, effect, now.ok ? now.data : null);
      setSettledElsewhere(message.startsWith("Someone else"));
      return setError(message);
    }
    ref.current?.close();
    onClose(r.what);
  };

  const changed = current.version !== effect.version || current.status !== effect.status;
  return html`<dialog
    ref=${ref}
    class="confirm"
    aria-labelledby="confirm-h"
    aria-describedby="confirm-what"
    onClose=${() => onClose(null)}
    data-testid="confirm"
  >
    <form onSubmit=${submit}>
      <h2 id="confirm-h">${TITLES[action]}: effect <span class="mono">${effect.id}</span></h2>
      <p id="confirm-what">${consequence(action, effect)}</p>
      ${changed ? html`<p class="warning" role="status">This effect changed while this dialog was open: it is now ${current.status}.</p>` : null}
      ${
        action === "succeeded"
          ? html`<label for="confirm-result">Verified result (the MCP tool result the provider returned, JSON)</label>
              <textarea id="confirm-result" name="result" rows="6" required defaultValue=${DEFAULT_RESULT}></textarea>
              <label for="confirm-op">Provider operation id (from the provider, optional)</label>
              <input id="confirm-op" name="operationId" autocomplete="off" />`
          : null
      }
      <label for="confirm-reason">Reason (recorded in the audit trail)</label>
      <textarea id="confirm-reason" name="reason" rows="2" required></textarea>
      ${error ? html`<p class="error" role="alert" data-testid="confirm-error">${error}</p>` : null}
      <div class="dialog-buttons">
        ${settledElsewhere ? null : html`<button type="submit" class="primary" disabled=${busy}>Confirm: ${TITLES[action].toLowerCase()}</button>`}
        <button type="button" onClick=${() => ref.current?.close()}>${settledElsewhere ? "Close" : "Cancel"}</button>
      </div>
    </form>
  </dialog>`;
}
