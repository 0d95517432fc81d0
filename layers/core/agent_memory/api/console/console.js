// The agent-memory console: seed 003's Studio memory section and an inspector for memory and
// learning. Plain modules, no build step, no CDN. Every call goes to this origin's API with the
// bearer token the person signed in with (kept in session storage), so the console can do what
// that token may do and nothing more. Content is always set as text, never as HTML.

const TOKEN_KEY = "agent-memory.token";
const main = document.getElementById("main");

// ---- the API ---------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, error) {
    super((error && error.message) || `the service answered ${status}`);
    this.status = status;
    this.tag = (error && error._tag) || "";
    this.path = (error && error.path) || [];
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const answer = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  if (answer.status !== 204) {
    try {
      data = await answer.json();
    } catch (_) {
      data = null;
    }
  }
  if (!answer.ok) {
    const error = new ApiError(answer.status, data && data.error);
    if (answer.status === 401) signedOut("Your token was refused: it is unknown, expired or revoked. Sign in again.");
    throw error;
  }
  return data;
}

// A route that may not exist on an older server: null instead of an error.
async function optional(method, path, body) {
  try {
    return await api(method, path, body);
  } catch (error) {
    if (error.status === 404 || error.status === 405) return null;
    throw error;
  }
}

// ---- building the page -----------------------------------------------------------------

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (value === true) node.setAttribute(name, "");
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function when(ms) {
  if (!ms) return "";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function badge(status) {
  return h("span", { class: `badge ${status}` }, status);
}

function empty(text) {
  return h("p", { class: "empty" }, text);
}

function problem(error, what) {
  let text = error.message;
  if (error.status === 404) text = `${what} was not found, or it is not yours to see.`;
  else if (error.status === 403) text = `You may see ${what}, but this token may not do that.`;
  return h("div", { class: "notice bad", role: "alert" }, text);
}

// While the sign-in form is up, a view that was loading must not replace it.
let awaitingSignIn = false;

function show(...nodes) {
  if (!awaitingSignIn) fill(main, ...nodes);
}

// replaceChildren, with nested lists of children flattened and text made text nodes.
function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
}

function link(href, text) {
  return h("a", { href }, text);
}

// ---- sign in ---------------------------------------------------------------------------

function signedOut(reason) {
  if (follower) follower.stop();
  awaitingSignIn = true;
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("whoami").textContent = "";
  document.getElementById("sign-out").hidden = true;
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true });
  const form = h(
    "form",
    { class: "card", id: "sign-in", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    reason ? h("div", { class: "notice bad", role: "alert" }, reason) : null,
    h("label", { for: "token" }, "Bearer token ", h("span", { class: "hint" }, "(kept in this tab only)")),
    h("div", { class: "row" }, input, h("button", { type: "submit" }, "Sign in")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    awaitingSignIn = false;
    try {
      await whoami();
      route();
    } catch (error) {
      if (error.status !== 401) show(problem(error, "your account"));
    }
  });
  fill(main, form);
  input.focus();
}

// A service key acts for the people of its organization (Act-As) and reads nothing as
// itself: the console is for a person, or the operator.
const SERVICE_KEY_REFUSED =
  "A service key cannot sign in: it acts for the people of its organization. Sign in with a person's token.";

async function whoami() {
  const me = await api("GET", "/v1/me");
  const user = me.user;
  if (user.role === "service-key") {
    signedOut(SERVICE_KEY_REFUSED);
    throw Object.assign(new Error(SERVICE_KEY_REFUSED), { status: 401 });
  }
  document.getElementById("whoami").textContent =
    user.role === "service-admin" ? "service admin" : `${user.id} · ${user.organizationId} · ${user.role}`;
  document.getElementById("sign-out").hidden = false;
  return user;
}

document.getElementById("sign-out").addEventListener("click", () => signedOut(""));

// ---- home: open what you want to look at ------------------------------------------------

async function home() {
  const opener = (kind, label) => {
    const id = `open-${kind}`;
    const input = h("input", { type: "text", id, name: id, required: true });
    const form = h(
      "form",
      { class: "row", "data-open": kind },
      h("div", {}, h("label", { for: id }, label), input),
      h("button", { type: "submit" }, "Open"),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = `#/${kind}/${encodeURIComponent(input.value.trim())}`;
    });
    return form;
  };
  const loading = (what, id) => h("div", { id }, h("p", { class: "empty" }, `Loading your ${what}…`));
  const agents = loading("agents", "home-agents");
  const sessions = loading("sessions", "home-sessions");
  const threads = loading("threads", "home-threads");
  const bots = loading("bots", "home-bots");
  show(
    h("h1", {}, "Memory"),
    h(
      "section",
      { class: "card" },
      h("h2", {}, "Open"),
      opener("agent", "Agent id (memory options, agent memory, learning)"),
      opener("session", "Session id"),
      opener("bot", "Bot id"),
      opener("thread", "Thread id"),
    ),
    h("section", { class: "card" }, h("h2", {}, "Your agents"), agents),
    h("section", { class: "card" }, h("h2", {}, "Your sessions"), sessions),
    h("section", { class: "card" }, h("h2", {}, "Your threads"), threads),
    h("section", { class: "card" }, h("h2", {}, "Your bots"), bots),
  );
  const listedAgents = listInto(agents, "agents", "/v1/agents?limit=50", (page) => page.data || page.agents || [], (agent) => link(`#/agent/${encodeURIComponent(agent.id)}`, `${agent.name} (${agent.id})`), "You have no agents yet. Create one with POST /v1/agents.");
  const listedThreads = listInto(threads, "threads", "/v1/threads?limit=50", (page) => page.threads || [], (thread) => link(`#/thread/${encodeURIComponent(thread.id)}`, `${thread.title || "Untitled"} (${thread.id})`), "You have no threads yet.");
  const listedBots = listInto(bots, "bots", "/v1/bots?limit=50", (page) => page.bots || [], (bot) => [link(`#/bot/${encodeURIComponent(bot.id)}`, `${bot.name} (${bot.id})`), bot.linked ? h("span", { class: "hint" }, " · linked from another organization") : null], "No bot is yours or shared with you yet.");
  // Sessions are listed per agent: the newest of each of your agents, newest first overall.
  const shownAgents = (await listedAgents) || [];
  await listInto(
    sessions,
    "sessions",
    null,
    async () => {
      const pages = await Promise.all(shownAgents.slice(0, 20).map((agent) => optional("GET", `/v1/sessions?agentId=${encodeURIComponent(agent.id)}&limit=20`)));
      if (pages.every((page) => page === null)) return null;
      const names = new Map(shownAgents.map((agent) => [agent.id, agent.name]));
      return pages.flatMap((page) => (page ? page.data : [])).sort((a, b) => (a.id < b.id ? 1 : -1)).slice(0, 50).map((one) => ({ ...one, agentName: names.get(one.agentId) }));
    },
    (one) => [link(`#/session/${encodeURIComponent(one.id)}`, one.id), h("span", { class: "hint" }, ` · ${one.kind} · ${one.agentName || one.agentId}`)],
    "You have no sessions yet.",
  );
  await Promise.all([listedThreads, listedBots]);
}

// One list of the home page: `path` read and its objects `pick`ed (with `path` null, `pick()`
// answers them), each a row. Answers the objects, or null when this server has no such list.
async function listInto(node, what, path, pick, row, none) {
  try {
    const listed = path === null ? await pick() : await optional("GET", path);
    const rows = listed === null ? null : path === null ? listed : pick(listed);
    fill(
      node,
      rows && rows.length
        ? h("ul", { class: "plain" }, rows.map((one) => h("li", { "data-id": one.id }, row(one))))
        : empty(rows ? none : `This server does not list ${what}: open one by its id above.`),
    );
    return rows;
  } catch (error) {
    fill(node, problem(error, `your ${what}`));
    return null;
  }
}

// ---- agent: memory options (seed 003 "In the Studio") -----------------------------------

// Every field of the editor: its path in the API shape, its label, and how to read it.
const OPTIONS = [
  {
    name: "lastMessages",
    title: "Last messages",
    help: "Recent messages read back on every turn (0–200). Off reads none.",
    number: { path: ["lastMessages"], label: "Messages", min: 0, max: 200 },
  },
  {
    name: "generateTitle",
    title: "Generate title",
    help: "A short title for the conversation, written from the first message.",
    fields: [
      { path: ["model"], label: "Title model", kind: "text", hint: "provider/model" },
      { path: ["instructions"], label: "Instructions", kind: "text" },
    ],
  },
  {
    name: "semanticRecall",
    title: "Semantic recall",
    help: "The past messages closest in meaning to the new one, from the user's conversations.",
    fields: [
      { path: ["topK"], label: "topK", kind: "number", min: 1, max: 30 },
      { path: ["messageRange"], label: "Message range", kind: "number", min: 0, max: 10 },
      { path: ["scope"], label: "Scope", kind: "select", choices: ["resource", "thread"] },
    ],
  },
  {
    name: "workingMemory",
    title: "Working memory",
    help: "Standing notes about the user, injected into the system prompt on every turn.",
    fields: [
      { path: ["scope"], label: "Scope", kind: "select", choices: ["resource", "thread"] },
      { path: ["agentManaged"], label: "The agent updates its notes", kind: "check" },
      { path: ["template"], label: "Template (Markdown)", kind: "textarea", wide: true },
      { path: ["schema"], label: "Schema (JSON Schema, instead of a template)", kind: "json", wide: true },
    ],
  },
  {
    name: "observationalMemory",
    title: "Observational memory",
    help: "A background observer keeps a dense log that replaces raw history once it gets long.",
    fields: [
      { path: ["model"], label: "Observer model", kind: "text", hint: "provider/model" },
      { path: ["activateAfterIdle"], label: "Activate after idle", kind: "duration", hint: 'ms, "5m", "1hr", "auto" or false' },
      { path: ["retrieval"], label: "Retrieval (recall tool)", kind: "check" },
      { path: ["observation", "messageTokens"], label: "Message tokens", kind: "number", min: 1000, max: 1000000 },
      { path: ["observation", "bufferTokens"], label: "Buffer tokens", kind: "number", hint: "a share (0–1) or a count" },
      { path: ["observation", "bufferActivation"], label: "Buffer activation", kind: "number" },
      { path: ["observation", "blockAfter"], label: "Block after", kind: "number" },
      { path: ["observation", "bufferOnIdle"], label: "Observe at the end of every turn", kind: "check" },
      { path: ["observation", "manageWorkingMemory"], label: "Observer manages working memory", kind: "check" },
      { path: ["observation", "threadTitle"], label: "Observer renames the thread", kind: "check" },
      { path: ["observation", "instruction"], label: "Observer instruction", kind: "text", wide: true },
      { path: ["reflection", "observationTokens"], label: "Reflection: observation tokens", kind: "number", min: 1000, max: 1000000 },
      { path: ["reflection", "bufferActivation"], label: "Reflection: buffer activation", kind: "number" },
      { path: ["reflection", "blockAfter"], label: "Reflection: block after", kind: "number" },
    ],
  },
  { name: "readOnly", title: "Read only", help: "Read memory but save nothing: no messages, notes or observations.", flag: true },
];

// The seed's "remember a user across conversations and runs", as one click.
const PRESET = {
  workingMemory: { enabled: true, scope: "resource" },
  observationalMemory: {
    enabled: true,
    observation: { manageWorkingMemory: true, bufferOnIdle: true, threadTitle: true },
  },
};

function dig(value, path) {
  let here = value;
  for (const key of path) {
    if (here === null || typeof here !== "object") return undefined;
    here = here[key];
  }
  return here;
}

function put(target, path, value) {
  let here = target;
  path.slice(0, -1).forEach((key) => {
    if (typeof here[key] !== "object" || here[key] === null) here[key] = {};
    here = here[key];
  });
  here[path[path.length - 1]] = value;
}

function isOn(saved, effective, option) {
  if (option.flag) return Boolean(saved === undefined ? effective : saved);
  if (option.number) return saved === undefined ? (effective ?? 10) !== 0 : saved !== false && saved !== 0;
  if (saved === undefined || saved === null) return Boolean(effective && effective.enabled);
  if (typeof saved === "boolean") return saved;
  return saved.enabled !== false;
}

function fieldId(option, path) {
  return `opt-${option.name}-${path.join("-")}`;
}

// A switch's state from a saved or effective value: a boolean, or an option object.
function flag(one) {
  return one !== null && typeof one === "object" ? one.enabled !== false : one;
}

function fieldControl(option, field, saved, effective) {
  const id = fieldId(option, field.path);
  const dataPath = ["memory", "options", option.name, ...field.path].join(".");
  const value = saved && typeof saved === "object" ? dig(saved, field.path) : undefined;
  const fallback = effective && typeof effective === "object" ? dig(effective, field.path) : undefined;
  let control;
  if (field.kind === "check") {
    control = h("input", { type: "checkbox", id, checked: Boolean(flag(value ?? fallback)) });
  } else if (field.kind === "select") {
    // "default" sends nothing, so the platform's default keeps applying.
    control = h(
      "select",
      { id },
      h("option", { value: "", selected: value === undefined || value === null }, `default${fallback ? ` (${fallback})` : ""}`),
      field.choices.map((choice) => h("option", { value: choice, selected: value === choice }, choice)),
    );
  } else if (field.kind === "textarea" || field.kind === "json") {
    const text = value === undefined || value === null ? "" : field.kind === "json" ? JSON.stringify(value, null, 2) : String(value);
    control = h("textarea", { id }, text);
  } else {
    let shown = value;
    if (field.path[0] === "messageRange" && value && typeof value === "object") shown = value.before;
    const shownDefault = fallback !== null && typeof fallback === "object" && "before" in fallback ? fallback.before : fallback;
    const placeholder = shownDefault === undefined || shownDefault === null || typeof shownDefault === "object" ? "" : String(shownDefault);
    control = h("input", {
      type: "text",
      inputmode: field.kind === "number" ? "decimal" : null,
      id,
      value: shown === undefined || shown === null ? "" : String(shown),
      placeholder,
    });
  }
  if (field.kind === "check") {
    // A switch is sent when it was saved or when the person moved it off its default.
    control.dataset.saved = value === undefined || value === null ? "" : "1";
    control.dataset.default = String(Boolean(flag(fallback)));
  }
  control.dataset.field = JSON.stringify(field.path);
  control.dataset.kind = field.kind;
  return h(
    "div",
    { class: field.wide ? "wide" : "", "data-path": dataPath },
    field.kind === "check"
      ? h("label", { for: id, class: "switch" }, control, field.label)
      : [h("label", { for: id }, field.label, field.hint ? h("span", { class: "hint" }, ` (${field.hint})`) : null), control],
  );
}

// A typed value as the API takes it; text the person typed that is not a number is sent as
// typed, so the server's 400 (and its path) tells them what is wrong.
function readField(control) {
  const kind = control.dataset.kind;
  if (kind === "check") {
    return control.dataset.saved || String(control.checked) !== control.dataset.default ? control.checked : undefined;
  }
  const raw = control.value.trim();
  if (raw === "") return undefined;
  if (kind === "number") return Number.isFinite(Number(raw)) ? Number(raw) : raw;
  if (kind === "duration") {
    if (raw === "false") return false;
    return /^\d+$/.test(raw) ? Number(raw) : raw;
  }
  if (kind === "json") {
    try {
      return JSON.parse(raw);
    } catch (_) {
      throw Object.assign(new Error("This is not valid JSON."), { control });
    }
  }
  return raw;
}

function collectOptions(form) {
  const options = {};
  for (const option of OPTIONS) {
    const box = form.querySelector(`[data-option="${option.name}"]`);
    const on = box.querySelector("input.option-switch").checked;
    if (option.flag) {
      options[option.name] = on;
      continue;
    }
    if (option.number) {
      const control = box.querySelector("input[data-kind=number]");
      // On with no number: the key is left out and the default (10) applies.
      options[option.name] = on ? readField(control) : false;
      continue;
    }
    if (!on) {
      options[option.name] = false;
      continue;
    }
    const value = {};
    box.querySelectorAll("[data-field]").forEach((control) => {
      const read = readField(control);
      if (read !== undefined) put(value, JSON.parse(control.dataset.field), read);
    });
    options[option.name] = Object.keys(value).length ? value : true;
  }
  return options;
}

function clearErrors(form) {
  form.querySelectorAll(".field-error").forEach((node) => node.remove());
  form.querySelectorAll("[aria-invalid]").forEach((node) => node.removeAttribute("aria-invalid"));
}

// Put the server's message beside the field its `path` names (or the nearest enclosing one).
function placeError(form, path, message) {
  const joined = path.map(String);
  for (let length = joined.length; length > 0; length -= 1) {
    const holder = form.querySelector(`[data-path="${CSS.escape(joined.slice(0, length).join("."))}"]`);
    if (!holder) continue;
    const control = holder.querySelector("input:not(.option-switch), select, textarea") || holder.querySelector("input");
    const note = h("p", { class: "field-error", role: "alert", id: `${control ? control.id : "x"}-error` }, message);
    if (control) {
      control.setAttribute("aria-invalid", "true");
      control.setAttribute("aria-describedby", note.id);
    }
    holder.append(note);
    if (control) control.focus();
    return;
  }
  fill(form.querySelector(".form-status"), h("p", { class: "field-error", role: "alert" }, `${path.join(".")}: ${message}`));
}

function optionBox(option, saved, effective) {
  const on = isOn(saved, effective, option);
  const id = `opt-${option.name}`;
  const toggle = h("input", { type: "checkbox", class: "option-switch", id, checked: on, "aria-describedby": `${id}-help` });
  const fields = option.number
    ? h("div", { class: "fields" }, fieldControl(option, { ...option.number, path: [], kind: "number" }, { value: saved }, { value: effective }))
    : option.fields
      ? h("div", { class: "fields" }, option.fields.map((field) => fieldControl(option, field, saved, effective)))
      : null;
  if (option.number && fields) {
    // lastMessages is a number, not an object: read it straight from the saved value.
    const control = fields.querySelector("input");
    control.value = typeof saved === "number" ? String(saved) : "";
    control.placeholder = typeof effective === "number" ? String(effective) : "10";
    control.closest("[data-path]").dataset.path = `memory.options.${option.name}`;
  }
  const sync = () => {
    if (fields) fields.hidden = !toggle.checked;
  };
  toggle.addEventListener("change", sync);
  sync();
  return h(
    "div",
    { class: "option", "data-option": option.name, "data-path": `memory.options.${option.name}` },
    h("label", { class: "switch", for: id }, toggle, option.title),
    h("p", { class: "hint", id: `${id}-help` }, option.help),
    fields,
  );
}

async function agentOptions(agentId) {
  const base = `/v1/agents/${encodeURIComponent(agentId)}`;
  let agent;
  let draft;
  try {
    [agent, draft] = await Promise.all([api("GET", base), api("GET", `${base}/draft`)]);
  } catch (error) {
    show(agentTabs(agentId, "options"), problem(error, `Agent ${agentId}`));
    return;
  }
  const saved = (draft.draft.memory && draft.draft.memory.options) || {};
  const effective = draft.draft.effective.memory.options;
  const form = h("form", { class: "card", id: "memory-options", novalidate: true });
  const render = (savedNow, effectiveNow) => {
    fill(form, 
      h("h2", {}, "Memory options (draft)"),
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", class: "secondary", id: "preset" }, "Remember a user across conversations and runs"),
        h("span", { class: "hint" }, "working memory per user, the observer keeping it, titles that follow the topic"),
      ),
      OPTIONS.map((option) => optionBox(option, savedNow[option.name], effectiveNow[option.name])),
      h("div", { class: "form-status", "aria-live": "polite" }),
      h("div", { class: "row" }, h("button", { type: "submit", id: "save" }, "Save draft"), h("button", { type: "button", class: "secondary", id: "reset" }, "Restore defaults")),
    );
    form.querySelector("#preset").addEventListener("click", () => {
      const merged = { ...collectOptionsSafe(form, savedNow), ...PRESET };
      render(merged, effectiveNow);
      fill(form.querySelector(".form-status"), h("p", { class: "notice good" }, "Preset applied: save the draft to keep it."));
    });
    form.querySelector("#reset").addEventListener("click", () => save(null));
  };
  const status = (node) => fill(form.querySelector(".form-status"), node);
  const save = async (memory) => {
    clearErrors(form);
    try {
      const answer = await api("PATCH", `${base}/draft`, { memory });
      render((answer.draft.memory && answer.draft.memory.options) || {}, answer.draft.effective.memory.options);
      status(h("p", { class: "notice good", role: "status" }, "Draft saved."));
      await versions();
    } catch (error) {
      if (error.status === 400 || error.status === 413) placeError(form, error.path, error.message);
      else status(problem(error, `Agent ${agentId}`));
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearErrors(form);
    let options;
    try {
      options = collectOptions(form);
    } catch (error) {
      const holder = error.control.closest("[data-path]");
      placeError(form, holder.dataset.path.split("."), error.message);
      return;
    }
    save({ options });
  });
  render(saved, effective);

  const versionsBox = h("section", { class: "card", id: "versions" });
  const versions = async () => {
    try {
      const listed = await api("GET", `${base}/versions`);
      const publish = h("button", { type: "button", id: "publish" }, "Publish the draft");
      publish.addEventListener("click", async () => {
        try {
          const made = await api("POST", `${base}/publish`, {});
          await versions();
          versionsBox.prepend(h("p", { class: "notice good", role: "status" }, `Published version ${made.version.number}.`));
        } catch (error) {
          versionsBox.prepend(problem(error, `Agent ${agentId}`));
        }
      });
      fill(versionsBox, 
        h("h2", {}, "Versions"),
        h("p", {}, listed.active === null ? "No version is active: threads use the platform defaults." : `Threads use version ${listed.active}.`),
        publish,
        listed.versions.length
          ? h(
              "table",
              {},
              h("thead", {}, h("tr", {}, h("th", {}, "Version"), h("th", {}, "Published"), h("th", {}, ""))),
              h(
                "tbody",
                {},
                listed.versions.map((version) => {
                  const activate = h("button", { type: "button", class: "secondary", "data-activate": version.number, disabled: version.number === listed.active }, version.number === listed.active ? "Active" : "Activate");
                  activate.addEventListener("click", async () => {
                    await api("POST", `${base}/versions/${version.number}/activate`, {});
                    await versions();
                  });
                  return h("tr", {}, h("td", {}, String(version.number)), h("td", {}, when(version.publishedAt || version.createdAt)), h("td", {}, activate));
                }),
              ),
            )
          : empty("Nothing published yet."),
      );
    } catch (error) {
      fill(versionsBox, problem(error, `Agent ${agentId}'s versions`));
    }
  };
  show(agentTabs(agentId, "options"), h("h1", {}, agent.agent.name), form, versionsBox);
  await versions();
}

function collectOptionsSafe(form, fallback) {
  try {
    return collectOptions(form);
  } catch (_) {
    return fallback;
  }
}

function agentTabs(agentId, current) {
  const id = encodeURIComponent(agentId);
  const tab = (name, href, text) => h("a", { href, "aria-current": current === name ? "page" : null }, text);
  return h("nav", { class: "tabs", "aria-label": "Agent" }, tab("options", `#/agent/${id}`, "Memory options"), tab("memory", `#/agent/${id}/memory`, "Agent memory and learning"));
}

// ---- the inspector ---------------------------------------------------------------------

function sourceLinks(sources, kind) {
  if (!sources || !sources.length) return empty("none");
  return h(
    "ul",
    { class: "plain" },
    sources.map((source) => {
      if (typeof source === "string") return h("li", {}, link(`#item-${source}`, source));
      if (source.entry) return h("li", {}, link(`#entry-${source.entry}`, `entry ${source.entry}`));
      if (source.session) return h("li", {}, link(`#/session/${encodeURIComponent(source.session)}`, `session ${source.session}`), " · ", h("span", { class: "mono" }, source.item));
      if (source.chat) return h("li", {}, h("span", {}, `chat ${source.chat}`), " · ", link(`#item-${source.item}`, source.item));
      return h("li", {}, JSON.stringify(source));
    }),
  );
}

function keyedEntries(entries) {
  const rows = Object.values(entries || {});
  if (!rows.length) return empty("No entries yet: memory appears here once a turn is learned or a person remembers something.");
  return h(
    "table",
    { class: "entries" },
    h("thead", {}, h("tr", {}, ["Key", "Kind", "Status", "Content", "Sources", "Updated"].map((name) => h("th", {}, name)))),
    h(
      "tbody",
      {},
      rows.map((entry) =>
        h("tr", { id: `entry-${entry.key}`, "data-key": entry.key }, h("td", { class: "mono" }, entry.key), h("td", {}, entry.kind), h("td", {}, badge(entry.status)), h("td", {}, entry.content), h("td", {}, sourceLinks(entry.sources)), h("td", {}, when(entry.updatedAt))),
      ),
    ),
  );
}

function botEntries(entries) {
  if (!entries.length) return empty("No entries you may see.");
  return h(
    "table",
    { class: "entries" },
    h("thead", {}, h("tr", {}, ["Id", "Layer", "Status", "Content", "Tags", "Sources", "Times"].map((name) => h("th", {}, name)))),
    h(
      "tbody",
      {},
      entries.map((entry) =>
        h(
          "tr",
          { id: `entry-${entry.id}`, "data-key": entry.id },
          h("td", { class: "mono" }, entry.id),
          h("td", {}, entry.layer, entry.confidence !== undefined && entry.confidence !== null ? ` (${entry.confidence})` : ""),
          h("td", {}, badge(entry.invalidatedAt ? "invalidated" : entry.status)),
          h("td", {}, entry.content),
          h("td", { class: "mono" }, (entry.tags || []).join(" ")),
          h("td", {}, sourceLinks(entry.sources)),
          h("td", {}, `created ${when(entry.createdAt)}`, h("br"), `updated ${when(entry.updatedAt)}`, entry.invalidatedAt ? [h("br"), `invalidated ${when(entry.invalidatedAt)}`] : null),
        ),
      ),
    ),
  );
}

function memoryText(text) {
  if (!text) return null;
  return h(
    "section",
    { class: "card", id: "memory-text" },
    h("h2", {}, "Memory text, as the model gets it"),
    h("p", { class: "hint" }, `${text.length} of ${text.maxLength} characters`),
    text.text ? h("pre", { class: "memory-text" }, text.text) : empty("Empty: no active entries, or memory use is off."),
  );
}

function changeLog(changes) {
  if (!changes || !changes.length) return empty("No changes yet.");
  return h(
    "table",
    { class: "log" },
    h("thead", {}, h("tr", {}, ["Version", "At", "By", "Changed"].map((name) => h("th", {}, name)))),
    h("tbody", {}, changes.map((change) => h("tr", {}, h("td", {}, String(change.version)), h("td", {}, when(change.at)), h("td", {}, change.by), h("td", { class: "mono" }, (change.keys || change.ids || []).join(", "))))),
  );
}

function describeChange(change) {
  if (!change || typeof change !== "object") return String(change);
  const parts = [change.op, change.key || change.id || "", change.content ? `“${change.content}”` : ""];
  return parts.filter(Boolean).join(" ");
}

function learning(executions) {
  if (!executions || !executions.length) return empty("No learning yet: executions appear after a turn completes.");
  return h(
    "table",
    { class: "learning" },
    h("thead", {}, h("tr", {}, ["Status", "Started", "Ended", "Items read", "Applied", "Rejected", "Why"].map((name) => h("th", {}, name)))),
    h(
      "tbody",
      {},
      executions.map((run) =>
        h(
          "tr",
          { "data-execution": run.id },
          h("td", {}, badge(run.status), run.reason ? h("div", { class: "hint" }, run.reason) : null, run.chatId ? h("div", { class: "hint" }, `chat ${run.chatId}`) : null, run.sessionId ? h("div", { class: "hint" }, link(`#/session/${encodeURIComponent(run.sessionId)}`, `session ${run.sessionId}`)) : null),
          h("td", {}, when(run.startedAt)),
          h("td", {}, when(run.endedAt)),
          h("td", { class: "mono" }, (run.itemIds || []).map((id, index) => [index ? ", " : "", link(`#item-${id}`, id)])),
          h("td", {}, (run.applied || []).length ? h("ul", { class: "plain" }, run.applied.map((one) => h("li", {}, `${one.op} ${one.key || one.id || ""}`))) : empty("nothing")),
          h(
            "td",
            { class: "rejected" },
            (run.rejected || []).length ? h("ul", { class: "plain" }, run.rejected.map((one) => h("li", {}, h("span", {}, describeChange(one.change)), " — ", h("strong", { class: "reason" }, one.reason)))) : empty("nothing"),
          ),
          // Why a run ended without applying: the service's note in words, then a failure's kind and message.
          h("td", { class: "run-why" }, run.note ? h("p", { class: "run-note" }, run.note) : null, run.error ? h("div", { class: "hint run-error" }, `${run.error.type}: ${run.error.message}`) : null),
        ),
      ),
    ),
  );
}

function itemsList(items) {
  if (!items) return empty("This server does not list a session's items.");
  if (!items.length) return empty("No items yet.");
  return h("ul", { class: "plain items" }, items.map((item) => h("li", { id: `item-${item.id}` }, h("span", { class: "mono" }, item.id), " ", h("strong", {}, item.role), item.app ? ` (${item.app})` : "", ": ", item.content)));
}

// A live view: follow the events feed, and refresh when something of this view changes.
let follower = null;

function follow(refresh) {
  if (follower) follower.stop();
  let stopped = false;
  let cursor = null;
  let timer = null;
  const indicator = h("p", { class: "live", role: "status" }, "Live: following changes.");
  const tick = async () => {
    if (stopped) return;
    try {
      const query = cursor ? `?after=${encodeURIComponent(cursor)}&limit=100` : "?limit=100";
      const feed = await optional("GET", `/v1/events${query}`);
      if (feed) {
        const first = cursor === null;
        cursor = feed.next || cursor;
        if (!first && feed.events.length) await refresh();
      } else {
        indicator.textContent = "Live: refreshing every few seconds.";
        await refresh();
      }
    } catch (_) {
      indicator.textContent = "Live view paused: the service did not answer.";
    }
    if (!stopped) timer = setTimeout(tick, 1500);
  };
  follower = {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
  tick();
  return indicator;
}

async function sessionView(sessionId) {
  const base = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  const memoryBox = h("section", { class: "card", id: "entries" });
  const textBox = h("div");
  const learningBox = h("section", { class: "card", id: "learning" });
  const itemsBox = h("section", { class: "card", id: "items" });
  let session;
  try {
    session = await api("GET", base);
  } catch (error) {
    show(h("h1", {}, `Session ${sessionId}`), problem(error, `Session ${sessionId}`));
    return;
  }
  const refresh = async () => {
    const [memory, text, runs, items] = await Promise.all([api("GET", `${base}/memory`), api("GET", `${base}/memory/text`), api("GET", `${base}/learning`), optional("GET", `${base}/items?limit=100`)]);
    fill(memoryBox, h("h2", {}, "Session memory"), h("p", { class: "hint" }, `use ${memory.settings.use ? "on" : "off"} · generate ${memory.settings.generate ? "on" : "off"} · read ${memory.processed.length} items`), keyedEntries(memory.entries));
    fill(textBox, memoryText(text));
    fill(learningBox, h("h2", {}, "Learning"), learning(runs.executions));
    fill(itemsBox, h("h2", {}, "Items"), itemsList(items ? items.items || items.data || [] : null));
  };
  const view = session.session;
  show(
    h("h1", {}, `Session ${view.id}`),
    h("p", { class: "hint" }, `agent `, link(`#/agent/${encodeURIComponent(view.agentId)}/memory`, view.agentId), ` · ${view.kind} · model ${view.model || "none"} · revision ${view.revision}`),
    memoryBox,
    textBox,
    learningBox,
    itemsBox,
  );
  try {
    await refresh();
    learningBox.prepend(follow(refresh));
  } catch (error) {
    fill(memoryBox, problem(error, `Session ${sessionId}`));
  }
}

async function agentMemoryView(agentId) {
  const base = `/v1/agents/${encodeURIComponent(agentId)}`;
  const memoryBox = h("section", { class: "card", id: "entries" });
  const textBox = h("div");
  const logBox = h("section", { class: "card", id: "log" });
  const learningBox = h("section", { class: "card", id: "learning" });
  let agent;
  try {
    agent = await api("GET", base);
  } catch (error) {
    show(agentTabs(agentId, "memory"), problem(error, `Agent ${agentId}`));
    return;
  }
  const refresh = async () => {
    const [memory, text, log, runs] = await Promise.all([api("GET", `${base}/memory`), api("GET", `${base}/memory/text`), api("GET", `${base}/memory/log`), api("GET", `${base}/learning`)]);
    fill(memoryBox, h("h2", {}, `Agent memory (version ${memory.version})`), keyedEntries(memory.entries));
    fill(textBox, memoryText(text));
    fill(logBox, h("h2", {}, "Change log"), changeLog(log.changes));
    fill(learningBox, h("h2", {}, "Learning"), learning(runs.executions));
  };
  show(agentTabs(agentId, "memory"), h("h1", {}, agent.agent.name), memoryBox, textBox, logBox, learningBox);
  try {
    await refresh();
    learningBox.prepend(follow(refresh));
  } catch (error) {
    fill(memoryBox, problem(error, `Agent ${agentId}'s memory`));
  }
}

async function botView(botId) {
  const base = `/v1/bots/${encodeURIComponent(botId)}`;
  const memoryBox = h("section", { class: "card", id: "entries" });
  const logBox = h("section", { class: "card", id: "log" });
  const learningBox = h("section", { class: "card", id: "learning" });
  let bot;
  try {
    bot = await api("GET", base);
  } catch (error) {
    show(h("h1", {}, `Bot ${botId}`), problem(error, `Bot ${botId}`));
    return;
  }
  const refresh = async () => {
    const [memory, log, runs] = await Promise.all([api("GET", `${base}/memory`), api("GET", `${base}/memory/log`), optional("GET", `${base}/learning`)]);
    fill(memoryBox, h("h2", {}, `Bot memory you may see (version ${memory.version})`), botEntries(memory.entries));
    fill(logBox, h("h2", {}, "Change log"), changeLog(log.changes));
    fill(learningBox, h("h2", {}, "Learning"), learning(runs ? runs.executions : []));
  };
  show(h("h1", {}, bot.bot.name), h("p", { class: "hint" }, `${bot.bot.organizationId}${bot.bot.linked ? " · reached through a link" : ""}`), memoryBox, logBox, learningBox);
  try {
    await refresh();
    learningBox.prepend(follow(refresh));
  } catch (error) {
    fill(memoryBox, problem(error, `Bot ${botId}'s memory`));
  }
}

async function threadView(threadId) {
  const base = `/v1/threads/${encodeURIComponent(threadId)}`;
  const messagesBox = h("section", { class: "card", id: "messages" });
  const notesBox = h("section", { class: "card", id: "working-memory" });
  const observationsBox = h("section", { class: "card", id: "observations" });
  const learningBox = h("section", { class: "card", id: "learning" });
  let thread;
  try {
    thread = await api("GET", base);
  } catch (error) {
    show(h("h1", {}, `Thread ${threadId}`), problem(error, `Thread ${threadId}`));
    return;
  }
  const refresh = async () => {
    const [fresh, messages, notes, observations, runs] = await Promise.all([api("GET", base), api("GET", `${base}/messages?limit=200`), optional("GET", `${base}/working-memory`), optional("GET", `${base}/observations`), optional("GET", `${base}/learning`)]);
    fill(learningBox, h("h2", {}, "Background work (titles, observations)"), learning(runs ? runs.executions : []));
    document.getElementById("thread-title").textContent = fresh.thread.title || "Untitled thread";
    fill(messagesBox, 
      h("h2", {}, "Messages"),
      messages.messages.length ? h("ol", { class: "plain" }, messages.messages.map((message) => h("li", { id: `item-${message.id}` }, h("strong", {}, message.role), ` · ${when(message.createdAt)}: `, message.content))) : empty("No messages yet."),
    );
    fill(notesBox, 
      h("h2", {}, "Working memory"),
      notes ? [h("p", { class: "hint" }, `${notes.scope} scope · ${notes.format}`), notes.content === null || notes.content === "" ? empty("No notes yet.") : h("pre", { class: "memory-text" }, typeof notes.content === "string" ? notes.content : JSON.stringify(notes.content, null, 2))] : empty("Working memory is off for this thread."),
    );
    fill(observationsBox, 
      h("h2", {}, "Observations"),
      observations && observations.log ? [h("p", { class: "hint" }, `${observations.tokens} tokens · ${observations.reflections} reflections`), h("pre", { class: "memory-text" }, observations.log)] : empty("No observations yet."),
    );
  };
  show(h("h1", { id: "thread-title" }, thread.thread.title || "Untitled thread"), h("p", { class: "hint" }, `agent ${thread.thread.agentId} · user ${thread.thread.resourceId} · created ${when(thread.thread.createdAt)}`), messagesBox, notesBox, observationsBox, learningBox);
  try {
    await refresh();
    messagesBox.prepend(follow(refresh));
  } catch (error) {
    fill(messagesBox, problem(error, `Thread ${threadId}`));
  }
}

// ---- routing ---------------------------------------------------------------------------

async function route() {
  if (!token()) {
    signedOut("");
    return;
  }
  if (follower) follower.stop();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [kind, id, sub] = parts;
  if (kind === "agent" && id) await (sub === "memory" ? agentMemoryView(id) : agentOptions(id));
  else if (kind === "session" && id) await sessionView(id);
  else if (kind === "bot" && id) await botView(id);
  else if (kind === "thread" && id) await threadView(id);
  else await home();
  main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", () => {
  // An in-page anchor (a source link) only scrolls; a view path changes the view.
  if (location.hash.startsWith("#/") || location.hash === "" || location.hash === "#") route();
});

(async () => {
  if (!token()) {
    signedOut("");
    return;
  }
  try {
    await whoami();
    await route();
  } catch (error) {
    if (error.status !== 401) show(problem(error, "your account"));
  }
})();
