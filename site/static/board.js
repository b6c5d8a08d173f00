// Leaderboard enhancement: instant search, filters and paging over the whole board, client-side.
// Without JavaScript the pre-rendered pages (100 rows each) still work; this script replaces the
// table body and pager once the board's JSON has loaded. State lives in the URL query string, so a
// filtered view is a link. Server text is inserted with textContent only, never as HTML, and isolated
// when it holds bidi controls, as the templates do.
(function () {
  "use strict";
  var table = document.querySelector("table.board[data-board]");
  if (!table || !window.fetch) return;
  var root = table.getAttribute("data-root");
  var board = table.getAttribute("data-board");
  var columns = JSON.parse(table.getAttribute("data-columns"));
  var category = table.getAttribute("data-category") || "";
  var prerendered = parseInt(table.getAttribute("data-page"), 10) || 1;  // this pre-rendered page's number
  var PAGE = 100;
  var LISTED = "listed";  // the board of listing-only servers (methodology deviation 80)
  // The filters this board offers are the selects its page rendered (the listed-only board has fewer).
  var FILTERS = Array.prototype.map.call(document.querySelectorAll("form.board-controls select"), function (s) {
    return [s.name, s.getAttribute("aria-label")];
  });
  var TIERS = { complete: "◉", verified: "◎", assessed: "◐", limited: "◔", unscored: "○" };

  // Text with bidi controls is wrapped in an isolate (FSI ... PDI) with a stray PDI dropped and open isolates
  // closed, so a U+202E in a server's name cannot reorder the table around it (pipeline/clean.py isolate_bidi).
  function isolate(text) {
    if (!/[\u202a-\u202e\u2066-\u2069]/.test(text)) return text;
    var out = "", open = 0;
    for (var i = 0; i < text.length; i++) {
      var ch = text.charAt(i);
      if (ch >= "\u2066" && ch <= "\u2068") open++;
      else if (ch === "\u2069") { if (!open) continue; open--; }
      out += ch;
    }
    return "\u2068" + out + "\u2069".repeat(open) + "\u2069";
  }
  function get(row, key) {
    return key.split(".").reduce(function (v, k) { return v == null ? null : v[k]; }, row);
  }
  function values(row, name) {
    if (name === "platform") return row.platforms || [];
    if (name === "source") return row.sources || [];
    if (name === "flag") {
      var flags = row.flags || [];
      var out = flags.map(function (f) { return f.label; });
      out.push(flags.length ? "any flag" : "no flags");
      if (flags.some(function (f) { return f.severity === "critical"; })) out.push("critical flags");
      return out;
    }
    var v = row[name];
    return [v == null || v === "" ? "–" : String(v)];
  }
  function fold(text) {
    // Case- and accent-insensitive; zero-width and bidi controls removed so hidden characters cannot block a match.
    return String(text || "").normalize("NFKD").replace(/[\u0300-\u036f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, "").toLowerCase();
  }

  function load(url) {
    return fetch(url).then(function (r) {
      if (!r.ok) throw new Error(url + ": HTTP " + r.status);
      return r.json();
    });
  }

  var sources = [load(root + "api/servers.json")];
  if (board !== "scoreboard" && board !== LISTED) sources.push(load(root + "api/" + board + ".json"));
  Promise.all(sources).then(function (data) {
    var index = data[0].servers;
    var rows = index;
    if (data[1]) {
      var common = {};
      index.forEach(function (r) { common[r.id] = r; });
      rows = data[1].servers.map(function (r) {
        var base = common[r.id] || {};
        var merged = {};
        Object.keys(base).forEach(function (k) { merged[k] = base[k]; });
        Object.keys(r).forEach(function (k) { merged[k] = r[k]; });
        return merged;
      });
    }
    if (category) rows = rows.filter(function (r) { return r.category === category; });
    if (board === LISTED) rows = rows.filter(function (r) { return r.listing_only; });
    rows.forEach(function (r) { r._text = fold([r.name, r.id, r.description].join(" ")); });
    start(rows);
  }).catch(function (error) {
    var note = document.querySelector(".board-status");
    if (note) note.textContent = "Search and filters are unavailable (" + error.message + "); the pages below still work.";
  });

  function start(every) {
    var form = document.querySelector("form.board-controls");
    var params = new URLSearchParams(location.search);
    var state = { q: params.get("q") || "", page: Math.max(1, parseInt(params.get("page"), 10) || prerendered) };
    FILTERS.forEach(function (f) { state[f[0]] = params.get(f[0]) || ""; });
    // Listing-only servers are hidden on the ranked boards unless the reader includes them (?listed=1).
    var toggle = form.querySelector("input[name=listed]");
    state.listed = toggle ? params.get("listed") === "1" : false;
    var rows;

    var search = form.querySelector("input[name=q]");
    search.value = state.q;
    function choices() {
      rows = board === LISTED || state.listed ? every : every.filter(function (r) { return !r.listing_only; });
      FILTERS.forEach(function (f) {
        var select = form.querySelector("select[name=" + f[0] + "]");
        var counts = {};
        rows.forEach(function (r) { values(r, f[0]).forEach(function (v) { counts[v] = (counts[v] || 0) + 1; }); });
        var names = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a] || (a < b ? -1 : 1); });
        select.textContent = "";
        var all = document.createElement("option");
        all.value = "";
        all.textContent = f[1] + ": all";
        select.appendChild(all);
        names.forEach(function (name) {
          var option = document.createElement("option");
          option.value = name;
          option.textContent = name + " (" + counts[name] + ")";
          select.appendChild(option);
        });
        select.value = state[f[0]];
      });
    }
    FILTERS.forEach(function (f) {
      var select = form.querySelector("select[name=" + f[0] + "]");
      select.addEventListener("change", function () { state[f[0]] = select.value; state.page = 1; update(); });
    });
    if (toggle) {
      toggle.checked = state.listed;
      toggle.addEventListener("change", function () { state.listed = toggle.checked; state.page = 1; choices(); update(); });
    }
    search.addEventListener("input", function () { state.q = search.value; state.page = 1; update(); });
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    choices();
    form.hidden = false;
    update();

    function matches(r, words) {
      for (var i = 0; i < FILTERS.length; i++) {
        var want = state[FILTERS[i][0]];
        if (want && values(r, FILTERS[i][0]).indexOf(want) < 0) return false;
      }
      for (var j = 0; j < words.length; j++) if (r._text.indexOf(words[j]) < 0) return false;
      return true;
    }

    function update() {
      var words = fold(state.q).split(/\s+/).filter(Boolean);
      var found = rows.filter(function (r) { return matches(r, words); });
      var pages = Math.max(1, Math.ceil(found.length / PAGE));
      state.page = Math.min(state.page, pages);
      var query = new URLSearchParams();
      ["q"].concat(FILTERS.map(function (f) { return f[0]; })).forEach(function (k) { if (state[k]) query.set(k, state[k]); });
      if (state.listed) query.set("listed", "1");
      if (state.page !== prerendered) query.set("page", String(state.page));
      var qs = query.toString();
      history.replaceState(null, "", location.pathname + (qs ? "?" + qs : ""));
      draw(found.slice((state.page - 1) * PAGE, state.page * PAGE));
      var hidden = every.length - rows.length;
      document.querySelector(".board-status").textContent =
        found.length + " of " + rows.length + " servers" + (pages > 1 ? " · page " + state.page + " of " + pages : "") +
        (hidden ? " · " + hidden + " listing-only not shown" : "");
      pager(pages);
    }

    function draw(slice) {
      var body = document.createElement("tbody");
      var tier = null;
      slice.forEach(function (r) {
        var its = r.listing_only ? "listed only" : r.visibility;
        if (board === "scoreboard" && its !== tier) {
          tier = its;
          var head = body.insertRow();
          head.className = "tier";
          var th = document.createElement("th");
          th.colSpan = columns.length;
          th.textContent = (TIERS[tier] || "") + " " + tier;
          head.appendChild(th);
        }
        var tr = body.insertRow();
        columns.forEach(function (c) { tr.appendChild(cell(r, c)); });
      });
      if (!slice.length) {
        var empty = body.insertRow().insertCell();
        empty.colSpan = columns.length;
        empty.textContent = "No server matches.";
      }
      table.replaceChild(body, table.tBodies[0]);
    }

    function cell(r, c) {
      var td = document.createElement("td");
      var v = get(r, c.key);
      if (c.kind === "server") {
        td.className = "s";
        var a = document.createElement("a");
        a.href = root + "servers/" + encodeURIComponent(r.id) + ".html";
        a.textContent = isolate(r.name);
        td.appendChild(a);
        if (r.description) {
          var d = document.createElement("div");
          d.className = "desc";
          d.textContent = isolate(r.description.length > 140 ? r.description.slice(0, 137) + "..." : r.description);
          td.appendChild(d);
        }
      } else if (c.kind === "grade" && r.listing_only) {
        td.textContent = "not measured";
      } else if (c.kind === "grade") {
        // A pill for a grade; a row without one shows a grey pill on the headline board (its tiers) and a dash elsewhere.
        if (r.grade || board === "scoreboard") {
          var g = document.createElement("span");
          g.className = "grade grade-" + (r.grade || "none").replace("+", "plus");
          g.textContent = r.grade || "–";
          td.appendChild(g);
        } else {
          td.appendChild(document.createTextNode("–"));
        }
        var dims = document.createElement("span");
        dims.className = "dims";
        dims.textContent = " (" + r.dimension_indicator + ")";
        td.appendChild(dims);
      } else if (c.kind === "score") {
        td.className = "num";
        td.textContent = v == null ? "–" : Number(v).toFixed(1);
      } else if (c.kind === "list") {
        td.textContent = isolate((v || []).join(", "));
      } else if (c.kind === "visibility" && r.listing_only) {
        td.textContent = "listed only";
      } else if (c.kind === "visibility") {
        td.textContent = (TIERS[v] || "") + " " + v;
      } else {
        if (c.kind === "num") td.className = "num";
        td.textContent = v == null || v === "" ? "–" : String(v);
      }
      return td;
    }

    function pager(pages) {
      var nav = document.querySelector("nav.pager");
      nav.textContent = "";
      if (pages < 2) return;
      [["← previous", state.page - 1], ["next →", state.page + 1]].forEach(function (p) {
        var b = document.createElement("button");
        b.type = "button";
        b.textContent = p[0];
        b.disabled = p[1] < 1 || p[1] > pages;
        b.addEventListener("click", function () { state.page = p[1]; update(); window.scrollTo(0, 0); });
        nav.appendChild(b);
      });
    }
  }
})();
