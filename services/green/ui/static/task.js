// One task page: follow its commands and status changes over server-sent events.
(function () {
  "use strict";
  const root = document.getElementById("task");
  if (!root || root.dataset.terminal === "1") return;
  const id = root.dataset.taskId;
  const list = document.getElementById("commands");
  let lastSeq = Number(root.dataset.lastSeq || 0);

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function addCommand(c) {
    if (c.seq <= lastSeq) return;
    lastSeq = c.seq;
    const empty = document.getElementById("no-commands");
    if (empty) empty.remove();
    list.querySelectorAll("details[open]").forEach((d) => d.removeAttribute("open"));
    const li = el("li", { "data-seq": c.seq, class: "new" });
    const details = el("details", { open: "" });
    const summary = el("summary");
    summary.append(el("span", { class: "seq" }, "#" + c.seq), " ",
      el("code", { class: "cmd" }, c.command), " ",
      el("span", { class: "exit " + (c.exit_code === 0 ? "ok" : "bad") }, "exit " + c.exit_code), " ",
      el("span", { class: "muted small" }, c.duration_s.toFixed(2) + "s" +
        (c.timed_out ? " timed out" : "") + (c.truncated ? " truncated" : "")));
    details.append(summary);
    if (c.command.split("\n").length > 3 || c.command.length > 240) {  // the summary shows 3 lines
      details.append(el("pre", { class: "cmd-full small" }, c.command));
    }
    details.append(el("pre", { class: "output", tabindex: "0" }, c.output));
    li.append(details);
    // Follow the newest command only when the reader is already at the bottom of the page.
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
    list.append(li);
    if (atBottom) li.scrollIntoView({ block: "nearest" });
    document.getElementById("steps").textContent = String(c.seq);
    const count = document.getElementById("commands-count");
    if (count) count.textContent = String(list.children.length);
  }

  function setStatus(status, detail) {
    const badge = el("span", { class: "badge s-" + status }, status);
    document.getElementById("status").replaceChildren(badge);
    const li = el("li");
    li.append(el("span", { class: "when" }, new Date().toISOString().slice(0, 19).replace("T", " ")),
      " ", badge.cloneNode(true), " ", el("span", { class: "small" }, detail || ""));
    document.getElementById("events").append(li);
  }

  const source = new EventSource("/ui/tasks/" + encodeURIComponent(id) + "/stream?after=" + lastSeq);
  source.addEventListener("command", (e) => addCommand(JSON.parse(e.data)));
  source.addEventListener("status", (e) => {
    const s = JSON.parse(e.data);
    setStatus(s.status, s.detail);
  });
  source.addEventListener("end", () => {
    source.close();
    document.getElementById("live-note").textContent = "(ended: loading the result)";
    setTimeout(() => window.location.reload(), 500);  // the result is rendered by the server
  });
})();
