// The page's upload goes to the app's streaming API (POST /api/runs, dashboards/api.py), never
// through a Dash callback as base64: files of any size upload from the page, with progress.
// When the run exists, the address points at it and the app follows (dcc.Location).
(function () {
  "use strict";

  // The status and the progress bar are the app's components too (its poll writes them): they are
  // set through Dash, never in the DOM behind React's back. React redraws only what it believes
  // changed: a run already done at its first poll shows the same "Done" as the run before, and a
  // status written in the DOM would stay on "ingesting..." for good.
  function set(id, props) {
    const dc = window.dash_clientside;
    if (dc && dc.set_props) {
      dc.set_props(id, props);
      return;
    }
    const el = document.getElementById(id); // no Dash renderer (yet): the element itself
    if (!el) return;
    if ("children" in props) {
      el.textContent = props.children;
      el.className = props.className;
    } else {
      el.value = props.value;
    }
  }

  function status(text, cls) {
    set("upload-status", { children: text, className: cls });
  }

  function progress(value) {
    set("progress", { value: String(value) });
  }

  function open(runId) {
    const q = new URLSearchParams(window.location.search);
    q.set("run", runId);
    q.set("page", "overview");
    q.set("uploaded", runId); // the app reports this run's outcome even if it is already made
    q.delete("job");
    window.history.pushState({}, "", window.location.pathname + "?" + q.toString());
    window.dispatchEvent(new CustomEvent("_dashprivate_pushstate"));
  }

  function send(fileList) {
    const files = Array.from(fileList || []);
    if (!files.length) return;
    const form = new FormData();
    files.forEach((f) => form.append("file", f, f.name));
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "api/runs");
    xhr.upload.onprogress = (e) => {
      if (!e.lengthComputable) return;
      progress(e.loaded / e.total);
      status("Uploading (" + Math.floor((100 * e.loaded) / e.total) + "%)", "ok");
    };
    // the last progress event may come before the last byte is sent: the bar fills when the body is sent
    xhr.upload.onload = () => {
      progress(1);
      status("Uploaded (100%); waiting for the app to take the files...", "ok");
    };
    xhr.onload = () => {
      let body = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch (err) {
        body = { error: xhr.responseText || xhr.statusText };
      }
      if (xhr.status === 202 && body.id) {
        status("Received " + files.length + " file(s); ingesting...", "ok");
        progress(0);
        open(body.id);
      } else {
        status("Upload refused: " + (body.error || xhr.statusText), "error");
      }
    };
    xhr.onerror = () => status("Upload failed: the connection to the app was lost; upload again", "error");
    status("Uploading...", "ok");
    progress(0);
    xhr.send(form);
  }

  // the file input is the page's own, not a Dash component: React never reads the files
  function choose() {
    const input = document.createElement("input");
    input.type = "file";
    input.multiple = true;
    input.id = "upload-input";
    input.style.display = "none";
    input.addEventListener("change", () => {
      send(input.files);
      input.remove();
    });
    document.getElementById("upload-input")?.remove();
    document.body.appendChild(input);
    input.click();
  }

  const inZone = (e) => e.target && e.target.closest && e.target.closest("#upload");
  document.addEventListener("click", (e) => {
    if (inZone(e)) {
      e.preventDefault();
      choose();
    }
  });
  document.addEventListener("keydown", (e) => {
    if ((e.key === "Enter" || e.key === " ") && e.target && e.target.id === "upload-choose") {
      e.preventDefault();
      choose();
    }
  });
  document.addEventListener("dragover", (e) => {
    if (!inZone(e)) return;
    e.preventDefault();
    inZone(e).classList.add("dragging");
  });
  document.addEventListener("dragleave", (e) => {
    if (inZone(e)) inZone(e).classList.remove("dragging");
  });
  document.addEventListener("drop", (e) => {
    if (!inZone(e)) return;
    e.preventDefault();
    inZone(e).classList.remove("dragging");
    send(e.dataTransfer.files);
  });
})();
