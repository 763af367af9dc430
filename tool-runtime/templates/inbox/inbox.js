// The approvals inbox's only script: live countdowns, times in the
// reader's zone, the lists kept current over server-sent events, and the
// edit form's JSON fields checked before they are sent. It inserts only
// HTML the server rendered and escaped; the Content-Security-Policy allows
// no other script.
"use strict";

(function () {
  var base = document.body.dataset.base || "";

  function two(n) { return (n < 10 ? "0" : "") + n; }

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".countdown[data-expires]").forEach(function (span) {
      var left = Number(span.dataset.expires) - now;
      var call = span.closest(".call, #edit");
      if (left <= 0) {
        span.textContent = "expired";
        if (call) {
          call.classList.add("expired");
          call.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
        }
        return;
      }
      var s = Math.floor(left / 1000);
      var h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
      span.textContent = "in " + (h > 0 ? h + ":" + two(m) : m) + ":" + two(s % 60);
    });
  }

  function localTimes(root) {
    root.querySelectorAll("time[data-ms]").forEach(function (t) {
      t.title = new Date(Number(t.dataset.ms)).toLocaleString();
    });
  }

  // What is being written survives an update of the lists: each field's
  // value (a reason, the fields of an answer), and the focus and caret of
  // the one that had them.
  function keepWritten(lists) {
    var written = {};
    var focused = null, caret = null;
    var each = function (visit) {
      lists.querySelectorAll(".call").forEach(function (call) {
        call.querySelectorAll("input[name], select[name], textarea[name]").forEach(function (input) {
          if (input.type === "hidden") { return; }
          visit(call.dataset.run + "\u0000" + call.dataset.call + "\u0000" + input.name, input);
        });
      });
    };
    each(function (key, input) {
      written[key] = input.type === "checkbox" ? input.checked : input.value;
      if (document.activeElement === input) {
        focused = key;
        caret = typeof input.selectionStart === "number" ? input.selectionStart : null;
      }
    });
    return function () {
      each(function (key, input) {
        if (!(key in written)) { return; }
        if (input.type === "checkbox") { input.checked = written[key]; } else { input.value = written[key]; }
        if (key === focused) {
          input.focus();
          if (caret !== null && input.setSelectionRange) { input.setSelectionRange(caret, caret); }
        }
      });
    };
  }

  function live() {
    var lists = document.getElementById("lists");
    if (!lists || !window.EventSource) { return; }
    var source = new EventSource(base + "/events");
    source.addEventListener("lists", function (event) {
      var kept = keepWritten(lists);
      lists.innerHTML = event.data;
      kept();
      localTimes(lists);
      tick();
      document.body.dataset.updatedAt = String(Date.now());
      document.body.dataset.updates = String(Number(document.body.dataset.updates || "0") + 1);
    });
    // Signed out (or over the live pages one approver may keep): the
    // stream ends for good, and the page says why.
    source.addEventListener("signed-out", function (event) {
      source.close();
      document.body.dataset.live = "signed-out";
      stopped(event.data);
    });
    source.addEventListener("error", function () {
      var closed = source.readyState === EventSource.CLOSED;
      document.body.dataset.live = closed ? "closed" : "reconnecting";
      if (closed) { stopped("Live updates are off: reload the page to see changes."); }
    });
    source.addEventListener("open", function () { document.body.dataset.live = "open"; });
  }

  function stopped(text) {
    var notice = document.getElementById("live-notice") || document.createElement("p");
    notice.id = "live-notice";
    notice.className = "notice failed";
    notice.setAttribute("role", "status");
    notice.textContent = text;
    var lists = document.getElementById("lists");
    lists.parentNode.insertBefore(notice, lists);
  }

  function jsonFields() {
    document.querySelectorAll("textarea[data-json]").forEach(function (area) {
      function check() {
        if (area.value.trim() === "" && !area.required) { area.setCustomValidity(""); return; }
        try { JSON.parse(area.value); area.setCustomValidity(""); }
        catch (e) { area.setCustomValidity("Write valid JSON: " + e.message); }
      }
      area.addEventListener("input", check);
      check();
    });
  }

  localTimes(document);
  tick();
  setInterval(tick, 1000);
  live();
  jsonFields();
})();
