// mhaudit annotate: keyboard shortcuts and saving. No framework; every text is set with textContent.
(function () {
  "use strict";
  var body = document.body;
  var guidelinesLink = document.getElementById("guidelines-link");
  if (guidelinesLink && body.dataset.guidelines) {
    guidelinesLink.href = body.dataset.guidelines;  // it says where "back" returns
  }
  var page = body.dataset.page;
  var shownAt = performance.now();

  function typing(event) {
    var t = event.target;
    return t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text"));
  }

  function modified(event) {
    return event.ctrlKey || event.metaKey || event.altKey;
  }

  function go(url) {
    if (url) { window.location.assign(url); }
  }

  // POST JSON with the page's token in the body (the server checks it: CSRF-lite).
  function post(url, payload) {
    payload.token = body.dataset.token;
    return fetch(url, {
      method: "POST", cache: "no-store", credentials: "same-origin",
      headers: {"Content-Type": "application/json"}, body: JSON.stringify(payload)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (answer) {
        if (!response.ok || !answer.ok) {
          throw new Error(answer.error || ("HTTP " + response.status));
        }
        return answer;
      });
    });
  }

  function checkedTags(scope) {
    return Array.prototype.map.call(scope.querySelectorAll("input.tag:checked"), function (box) { return box.value; });
  }

  function setStatus(element, text, isError) {
    element.textContent = text;
    element.classList.toggle("error", Boolean(isError));
  }

  function initItem() {
    var status = document.getElementById("status");
    var panel = document.getElementById("tags-panel");
    var note = document.getElementById("note");
    var busy = false;
    var tagBoxes = {};
    Array.prototype.forEach.call(panel.querySelectorAll("input.tag"), function (box) { tagBoxes[box.dataset.key] = box; });

    function payload(value) {
      return {item_id: body.dataset.itemId, task: body.dataset.task, value: value, tags: checkedTags(panel),
              note: note.value, elapsed_ms: Math.round(performance.now() - shownAt)};
    }

    function answer(value) {
      if (busy) { return; }
      busy = true;
      setStatus(status, "saving…", false);
      post(body.dataset.api, payload(value)).then(function (reply) {
        body.dataset.saved = String(value);
        setStatus(status, "Saved: " + value, false);
        go(reply.next);
      }).catch(function (error) {
        busy = false;
        setStatus(status, "NOT SAVED: " + error.message, true);
      });
    }

    // Tags or note changed on an item already answered: save them at once, stay on the item.
    function resave() {
      if (busy || body.dataset.saved === "") { return; }
      var value = Number(body.dataset.saved);
      busy = true;
      post(body.dataset.api, payload(value)).then(function () {
        busy = false;
        setStatus(status, "Saved: " + value + " (tags and note updated)", false);
      }).catch(function (error) {
        busy = false;
        setStatus(status, "NOT SAVED: " + error.message, true);
      });
    }

    Array.prototype.forEach.call(document.querySelectorAll("button.label-button"), function (button) {
      button.addEventListener("click", function () { answer(Number(button.dataset.value)); });
    });
    Array.prototype.forEach.call(panel.querySelectorAll("input.tag"), function (box) {
      box.addEventListener("change", resave);
    });
    note.addEventListener("change", resave);

    document.addEventListener("keydown", function (event) {
      if (typing(event)) {
        if (event.key === "Escape") { event.target.blur(); event.preventDefault(); }
        return;
      }
      if (modified(event)) { return; }
      var key = event.key;
      if (key === "1" || key === "0") {
        event.preventDefault();
        if (!event.repeat) { answer(Number(key)); }
      } else if (key === "t") {
        event.preventDefault();
        panel.open = !panel.open;
      } else if (key === "n") {
        event.preventDefault();
        note.focus();
      } else if (key === "ArrowLeft") {
        event.preventDefault();
        go(body.dataset.prev);
      } else if (key === "ArrowRight") {
        event.preventDefault();
        go(body.dataset.next);
      } else if (key === "g") {
        go(body.dataset.guidelines);
      } else if (panel.open && Object.prototype.hasOwnProperty.call(tagBoxes, key)) {
        event.preventDefault();
        var box = tagBoxes[key];
        box.checked = !box.checked;
        box.dispatchEvent(new Event("change"));
      }
    });
  }

  function initAdjudicate() {
    var cases = Array.prototype.slice.call(document.querySelectorAll("section.case"));
    var resolvedCount = document.getElementById("n-resolved");
    var current = -1;

    function focusCase(index) {
      if (!cases.length) { return; }
      current = Math.max(0, Math.min(cases.length - 1, index));
      cases.forEach(function (section, i) { section.classList.toggle("current", i === current); });
      cases[current].focus();
    }

    function nextOpen(from) {
      for (var i = from + 1; i < cases.length; i++) {
        if (!cases[i].classList.contains("resolved")) { return i; }
      }
      return from;
    }

    function record(section, value) {
      if (section.dataset.busy === "1") { return; }
      section.dataset.busy = "1";
      var label = section.querySelector(".case-status");
      post(body.dataset.api, {
        item_id: section.dataset.itemId, task: section.dataset.task, value: value,
        tags: checkedTags(section), note: section.querySelector(".consensus-note").value
      }).then(function () {
        section.dataset.busy = "";
        section.classList.add("resolved");
        setStatus(label, "consensus: " + value, false);
        resolvedCount.textContent = String(document.querySelectorAll("section.case.resolved").length);
        focusCase(nextOpen(cases.indexOf(section)));
      }).catch(function (error) {
        section.dataset.busy = "";
        setStatus(label, "NOT SAVED: " + error.message, true);
      });
    }

    cases.forEach(function (section, i) {
      section.addEventListener("focus", function () {
        current = i;
        cases.forEach(function (other, j) { other.classList.toggle("current", j === i); });
      });
      Array.prototype.forEach.call(section.querySelectorAll("button.consensus-button"), function (button) {
        button.addEventListener("click", function () { record(section, Number(button.dataset.value)); });
      });
    });

    var agreed = document.getElementById("record-agreed");
    var agreedStatus = document.getElementById("agreed-status");
    agreed.disabled = agreed.dataset.pending === "0";
    agreed.addEventListener("click", function () {
      agreed.disabled = true;
      post(body.dataset.agreedApi, {}).then(function (reply) {
        setStatus(agreedStatus, "Recorded " + reply.written + " agreed items.", false);
      }).catch(function (error) {
        agreed.disabled = false;
        setStatus(agreedStatus, "NOT SAVED: " + error.message, true);
      });
    });

    document.addEventListener("keydown", function (event) {
      if (typing(event)) {
        if (event.key === "Escape") { event.target.blur(); event.preventDefault(); }
        return;
      }
      if (modified(event)) { return; }
      var key = event.key;
      if (key === "j" || key === "ArrowDown") {
        event.preventDefault();
        focusCase(current + 1);
      } else if (key === "k" || key === "ArrowUp") {
        event.preventDefault();
        focusCase(current - 1);
      } else if ((key === "1" || key === "0") && current >= 0 && !event.repeat) {
        event.preventDefault();
        record(cases[current], Number(key));
      } else if (key === "g") {
        go(body.dataset.guidelines);
      }
    });

    var firstOpen = cases.findIndex(function (section) { return !section.classList.contains("resolved"); });
    focusCase(firstOpen === -1 ? 0 : firstOpen);
  }

  function initBack() {
    document.addEventListener("keydown", function (event) {
      if (typing(event) || modified(event)) { return; }
      if (page === "guidelines" && (event.key === "Escape" || event.key === "b")) {
        go(body.dataset.back);
      } else if (page === "done" && event.key === "ArrowLeft") {
        go(body.dataset.prev);
      } else if (page === "done" && event.key === "g") {
        go(body.dataset.guidelines);
      }
    });
  }

  if (page === "item") {
    initItem();
  } else if (page === "adjudicate") {
    initAdjudicate();
  } else if (page === "guidelines" || page === "done") {
    initBack();
  }
})();
