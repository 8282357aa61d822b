// ctalk's pages work without this script. It shows times in the person's
// time zone, gives each command a copy button, keeps the count of what
// waits for them up to date without a reload (from the /events stream),
// adds a channel's new messages to its open page, announces new items
// quietly, and adds a few keyboard shortcuts (? lists them).
"use strict";
(function () {
  var body = document.body;

  // Times: how long ago in words, refreshed every minute, and the absolute
  // time in the person's own time zone on hover or focus. Formatting with
  // Intl is slow the first time and for every new format, so each format
  // is made once, and the absolute time only when a time is pointed at.
  var formats = {};
  function format(kind, d) {
    if (!formats[kind]) {
      formats[kind] = new Intl.DateTimeFormat(undefined, kind === "day" ? { year: "numeric", month: "short", day: "numeric" } :
        { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
    }
    return formats[kind].format(d);
  }
  function plural(n, one, many) { return n + " " + (n === 1 ? one : (many || one + "s")); }
  function ago(d) {
    var s = Math.round((Date.now() - d) / 1000), future = s < 0, m;
    // The past rounds down ("1 hour ago" until two have passed); the
    // future to the nearest, so that a session idle for two hours reads
    // "in 2 hours" just after it was used, not "in 1 hour".
    var whole = future ? Math.round : Math.floor;
    s = Math.abs(s);
    if (s < 60) { return "just now"; }
    if (whole(s / 60) < 60) { m = plural(whole(s / 60), "min", "min"); }
    else if (whole(s / 3600) < 24) { m = plural(whole(s / 3600), "hour"); }
    else if (whole(s / 86400) < 30) { m = plural(whole(s / 86400), "day"); }
    else { return format("day", d); }
    return future ? "in " + m : m + " ago";
  }
  function times() {
    document.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) { return; }
      var text = ago(d);
      if (el.textContent !== text) { el.textContent = text; }
    });
  }
  function local(ev) {
    var el = ev.target && ev.target.closest ? ev.target.closest("time[datetime]") : null;
    if (!el || el.hasAttribute("data-local")) { return; }
    var d = new Date(el.getAttribute("datetime"));
    if (isNaN(d)) { return; }
    el.title = format("absolute", d);
    el.setAttribute("data-local", "");
  }
  document.addEventListener("pointerover", local);
  document.addEventListener("focusin", local);
  times();
  setInterval(times, 60000);

  // Keyboard shortcuts, never while typing.
  var help = null;
  function move(step) {
    var items = Array.prototype.slice.call(document.querySelectorAll(".item"));
    if (!items.length) { return; }
    var at = document.activeElement && document.activeElement.closest ? document.activeElement.closest(".item") : null;
    var i = items.indexOf(at);
    i = i < 0 ? (step > 0 ? 0 : items.length - 1) : Math.min(items.length - 1, Math.max(0, i + step));
    items[i].tabIndex = -1;
    items[i].focus();
  }
  function toggleHelp() {
    if (!help) {
      help = document.createElement("div");
      help.className = "shortcuts";
      help.setAttribute("role", "dialog");
      help.setAttribute("aria-label", "Keyboard shortcuts");
      help.innerHTML = "<h2>Keyboard shortcuts</h2><dl><dt><kbd>j</kbd></dt><dd>Next item</dd>" +
        "<dt><kbd>k</kbd></dt><dd>Previous item</dd><dt><kbd>?</kbd></dt><dd>Show or hide this list</dd>" +
        "<dt><kbd>Esc</kbd></dt><dd>Close it</dd></dl>";
      help.hidden = true;
      body.appendChild(help);
    }
    help.hidden = !help.hidden;
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || t.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(t.tagName)) { return; }
    if (e.key === "j" || e.key === "k") { move(e.key === "j" ? 1 : -1); e.preventDefault(); }
    else if (e.key === "?") { toggleHelp(); e.preventDefault(); }
    else if (e.key === "Escape" && help && !help.hidden) { help.hidden = true; }
  });

  // Copy buttons: each command (a <pre> in .command, readable and
  // selectable without the script) gets a button that copies it whole and
  // says so. Where the clipboard API is missing (a page served over plain
  // http to another machine), the button selects the command for the
  // person to copy.
  document.querySelectorAll(".command > pre[id]").forEach(function (pre) {
    var button = document.createElement("button");
    var said = document.createElement("span");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-describedby", pre.id);
    said.className = "copied";
    said.setAttribute("role", "status");
    function select() {
      var range = document.createRange();
      range.selectNodeContents(pre);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    button.addEventListener("click", function () {
      var text = pre.textContent;
      if (!navigator.clipboard || !navigator.clipboard.writeText) {
        select();
        said.textContent = "Selected: press Ctrl+C (or ⌘C) to copy.";
        return;
      }
      navigator.clipboard.writeText(text).then(function () {
        said.textContent = "Copied.";
      }, function () {
        select();
        said.textContent = "Selected: press Ctrl+C (or ⌘C) to copy.";
      });
    });
    pre.parentNode.appendChild(button);
    pre.parentNode.appendChild(said);
  });

  // Live updates, for a signed-in person.
  if (!body.classList.contains("app") || !window.EventSource) { return; }
  var title = document.title.replace(/^\(\d+\) /, "");
  var shown = Number(body.getAttribute("data-waiting") || 0); // questions this page shows
  var first = null; // the counts when the stream opened
  var path = location.pathname;
  var onInbox = path === "/inbox" || path.indexOf("/inbox/") === 0;
  var onAsked = path === "/asked" || path.indexOf("/asked/") === 0;
  // A polite live region, fixed to the bottom of the window: what it says
  // never moves what the person is about to click.
  var region = document.createElement("div");
  region.className = "live";
  region.setAttribute("role", "status");
  region.setAttribute("aria-live", "polite");
  body.appendChild(region);

  function count(n) {
    document.title = (n ? "(" + n + ") " : "") + title;
    var el = document.getElementById("waiting-count");
    if (!el) {
      var link = document.querySelector('.top nav a[href="/inbox"]');
      if (!link) { return; }
      el = document.createElement("span");
      el.className = "count";
      el.id = "waiting-count";
      link.appendChild(el);
    }
    el.textContent = n;
    el.hidden = !n;
  }
  function say(text, link) {
    // Room below the page, so that the announcement covers nothing at its end.
    body.classList.add("announced");
    region.textContent = text;
    if (link) {
      region.appendChild(document.createTextNode(" — "));
      var a = document.createElement("a");
      a.href = path + location.search;
      a.textContent = "show";
      region.appendChild(a);
    }
  }
  function announce(c) {
    var news = [];
    if (onInbox) {
      if (c.waiting > shown) { news.push(plural(c.waiting - shown, "new question")); }
      if (c.waiting < shown) { news.push(plural(shown - c.waiting, "question") + " no longer waiting"); }
      if (c.drafts > first.drafts) { news.push(plural(c.drafts - first.drafts, "new draft")); }
      if (c.posts > first.posts) { news.push(plural(c.posts - first.posts, "channel post") + " to approve"); }
    }
    if (onAsked && c.replies > first.replies) { news.push(plural(c.replies - first.replies, "new reply", "new replies")); }
    if (news.length) { say(news.join(", "), true); }
  }

  // A channel page that ends with the newest messages asks the stream for
  // the channel's new ones, after the last it shows.
  var feed = document.getElementById("messages");
  var channel = feed && feed.getAttribute("data-channel");
  var posts = 0;
  var src = "/events";
  if (channel) {
    src += "?channel=" + encodeURIComponent(channel) + "&after=" + encodeURIComponent(feed.getAttribute("data-after") || "0");
  }
  function post(m) {
    if (!channel || document.getElementById(m.id)) { return; }
    var empty = document.getElementById("no-messages");
    if (empty) { empty.parentNode.removeChild(empty); }
    // The server rendered it with the page's own template.
    feed.insertAdjacentHTML("beforeend", m.html);
    feed.setAttribute("data-after", m.seq);
    times();
    var added = document.getElementById(m.id);
    if (added && added.classList.contains("unread")) {
      posts++;
      say(plural(posts, "new message") + " in #" + channel, false);
    }
  }

  var events = new EventSource(src);
  events.addEventListener("post", function (e) { post(JSON.parse(e.data)); });
  events.addEventListener("open", function () { body.setAttribute("data-live", "open"); });
  events.addEventListener("counts", function (e) {
    var c = JSON.parse(e.data);
    if (!first) { first = c; }
    count(c.waiting);
    announce(c);
  });
  events.addEventListener("error", function (e) {
    body.setAttribute("data-live", "closed");
    // An error event from the server (the session ended), or a refusal:
    // the browser will not reconnect.
    if (e.data || events.readyState === EventSource.CLOSED) {
      events.close();
      say("Live updates stopped: you were signed out, or too many ctalk pages are open. Reload the page to try again.", false);
    }
  });
})();
