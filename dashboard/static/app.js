// testdbd dashboard: polls the daemon's public REST API and renders servers,
// templates and pools, leases, latency, recent resets and errors. Plain
// JavaScript, no dependencies; every value from the API goes into the page
// as text (textContent), never as HTML.
'use strict';

(() => {
  const POLL_MS = 1500;
  const EVENTS_RETRY_MS = 30000; // how often to ask again when /v1/events is not available
  const HISTORY_MAX = 480; // sparkline points kept (12 minutes at 1.5 s)
  const TOKEN_KEY = 'testdbd.token';
  const STRATEGIES = ['STRATEGY_TRUNCATE', 'STRATEGY_SNAPSHOT', 'STRATEGY_ROLLBACK'];
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);

  // ---- the token: session storage only, sent as a header, never in a URL ----

  let memoryToken = ''; // when session storage is unavailable
  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return memoryToken; }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { memoryToken = t; }
  }

  // ---- the API ----

  class AuthError extends Error {}
  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  let clockOffset = 0; // the daemon's clock minus ours, in ms, when they differ by more than 2 s

  async function api(method, path) {
    const headers = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    const resp = await fetch(path, { method, headers, cache: 'no-store', credentials: 'same-origin', redirect: 'error' });
    const date = Date.parse(resp.headers.get('Date') || '');
    if (!Number.isNaN(date)) {
      const off = date - Date.now();
      clockOffset = Math.abs(off) > 2000 ? off : 0;
    }
    const text = await resp.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (resp.status === 401) throw new AuthError((body && body.message) || 'unauthenticated');
    if (!resp.ok) {
      throw new ApiError(resp.status, body && body.code, (body && body.message) || resp.statusText || 'HTTP ' + resp.status);
    }
    return body || {};
  }

  // ---- formatting ----

  const num = (v) => Number(v || 0);
  const now = () => Date.now() + clockOffset;

  function fmtMs(v) {
    v = num(v);
    if (v === 0) return '0';
    if (v < 10) return v.toFixed(2);
    if (v < 100) return v.toFixed(1);
    return Math.round(v).toLocaleString('en');
  }

  function fmtBytes(v) {
    v = num(v);
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(v) : v < 10 ? v.toFixed(1) : Math.round(v).toString()) + ' ' + units[i];
  }

  function fmtDuration(ms) {
    let s = Math.max(0, Math.floor(ms / 1000));
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return `${d} d ${h} h`;
    if (h) return `${h} h ${m} min`;
    if (m) return `${m} min ${s} s`;
    return `${s} s`;
  }

  // fmtClock is the time of day with its zone (the browser's), e.g.
  // "14:03:22 UTC" or "15:03:22 CET": a bare time is ambiguous when the
  // daemon runs elsewhere.
  function fmtClock(ts) {
    const d = new Date(ts);
    return Number.isNaN(d.getTime()) ? '' : d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });
  }

  const strategyName = (s) => (s || 'STRATEGY_UNSPECIFIED').replace(/^STRATEGY_/, '').toLowerCase();
  const templateState = (s) => (s || 'TEMPLATE_STATE_UNSPECIFIED').replace(/^TEMPLATE_STATE_/, '');
  const shortHash = (h) => (h || '').slice(0, 12);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + 's'}`;

  // ---- DOM helpers ----

  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const k of kids) if (k != null && k !== false) e.append(k);
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG_NS, tag);
    setAttrs(e, attrs);
    for (const k of kids) if (k != null && k !== false) e.append(k);
    return e;
  }
  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  function setText(node, text) {
    text = text == null ? '' : String(text);
    if (node.textContent !== text) node.textContent = text;
  }
  function replaceKids(node, ...kids) {
    node.replaceChildren(...kids.filter((k) => k != null && k !== false));
  }
  // fill replaces a cell's content only when what it shows changes, so that
  // nothing flickers and text selections survive the polling.
  function fill(cell, sig, ...kids) {
    if (cell.dataset.sig === sig) return;
    cell.dataset.sig = sig;
    replaceKids(cell, ...kids);
  }
  const sub = (text) => h('span', { class: 'sub', text });
  const since = (ts, prefix) => h('span', { 'data-since': ts || '', 'data-prefix': prefix || '', text: ts ? ago(ts, prefix) : '–' });
  function ago(ts, prefix) {
    const t = Date.parse(ts);
    return Number.isNaN(t) ? '–' : (prefix || '') + fmtDuration(now() - t);
  }

  function announce(msg) {
    const a = $('announcer');
    a.textContent = '';
    setTimeout(() => { a.textContent = msg; }, 50);
  }

  let alertTimer = 0;
  function showAlert(msg, ok) {
    const a = $('alert');
    a.textContent = msg;
    a.classList.toggle('ok', !!ok);
    a.hidden = false;
    clearTimeout(alertTimer);
    alertTimer = setTimeout(() => { a.hidden = true; }, ok ? 5000 : 15000);
  }

  // syncTable updates a table's rows in place, keyed, so rows (and the
  // focus on their buttons) survive every poll. build adds what a new row
  // keeps (buttons); update fills the cells.
  function syncTable(table, items, keyOf, build, update) {
    const tbody = table.tBodies[0];
    const heads = [...table.tHead.rows[0].cells];
    const old = new Map([...tbody.rows].map((tr) => [tr.dataset.key, tr]));
    const first = table.dataset.rendered !== 'yes';
    const seen = new Set();
    let prev = null;
    for (const item of items) {
      const key = keyOf(item);
      seen.add(key);
      let tr = old.get(key);
      if (!tr) {
        tr = h('tr', { role: 'row', 'data-key': key });
        for (const th of heads) {
          tr.append(h('td', { role: 'cell', class: th.className || null, 'data-label': th.textContent.trim() }));
        }
        if (build) build(tr, item);
        if (!first) tr.classList.add('fresh');
      }
      update(tr.cells, item, tr);
      const want = prev ? prev.nextElementSibling : tbody.firstElementChild;
      if (want !== tr) tbody.insertBefore(tr, want);
      prev = tr;
    }
    for (const [key, tr] of old) {
      if (seen.has(key)) continue;
      if (tr.contains(document.activeElement)) moveFocusFrom(tr, table);
      tr.remove();
    }
    table.dataset.rendered = 'yes';
    table.hidden = items.length === 0;
  }

  // moveFocusFrom keeps keyboard users in place when the row they are on
  // goes away: the next row's button, else the previous one's, else the
  // section's heading.
  function moveFocusFrom(tr, table) {
    for (const row of [tr.nextElementSibling, tr.previousElementSibling]) {
      const b = row && row.querySelector('button');
      if (b) { b.focus(); return; }
    }
    const heading = table.closest('section').querySelector('h2');
    heading.tabIndex = -1;
    heading.focus();
  }

  // ---- state ----

  let paused = false;
  let needToken = false;
  let pollTimer = 0;
  let polling = false;
  let lastLeases = [];
  const history = []; // {t, STRATEGY_…: p50 or null, acquire}
  const events = { available: null, lastTry: 0, note: '' };

  // ---- overview tiles ----

  function renderTiles(st, inst, tpls, leases) {
    setText($('t-instances'), inst.length);
    setText($('t-databases'), num(st.databases));
    setText($('t-templates'), tpls.length);
    setText($('t-leases'), leases.length);
    setText($('t-acquired'), num(st.leases_acquired).toLocaleString('en'));
    setText($('t-expired'), num(st.leases_expired).toLocaleString('en'));
    setText($('t-exhausted'), num(st.acquire_exhausted).toLocaleString('en'));
  }

  // ---- servers ----

  function stateBadge(state) {
    const cls = { running: 'ok', starting: 'info', failed: 'bad' }[state] || '';
    return h('span', { class: 'badge ' + cls, text: state || 'unknown' });
  }

  function renderServers(list) {
    list = [...list].sort((a, b) => a.id.localeCompare(b.id));
    let sizeMissing = false;
    syncTable($('servers'), list, (i) => i.id, null, (c, i) => {
      fill(c[0], i.id + i.port + i.pid + i.container_id, h('code', { text: i.id }),
        sub(`${i.host}:${i.port}` + (i.pid ? ` · pid ${i.pid}` : '') + (i.container_id ? ` · ${i.container_id.slice(0, 12)}` : '')));
      fill(c[1], i.engine + i.version, document.createTextNode(`${i.engine} ${i.version}`));
      fill(c[2], i.provider + i.image, document.createTextNode(i.provider), i.image ? sub(i.image) : null);
      const mism = i.settings_mismatched || [];
      fill(c[3], i.state + i.error + mism.join(), stateBadge(i.state),
        i.error ? h('span', { class: 'sub error-text', text: i.error }) : null,
        mism.length ? h('span', { class: 'sub warn-text', text: `${plural(mism.length, 'setting')} not as asked: ${mism.join(', ')}` }) : null);
      setText(c[4], fmtBytes(i.memory_bytes));
      // datadir_size_bytes is not in the API yet; the bar appears once it is.
      const size = num(i.datadir_size_bytes);
      if (!size) sizeMissing = true;
      const used = num(i.datadir_bytes);
      const usage = size ? h('span', { class: 'usage', role: 'presentation' }, h('span')) : null;
      if (usage) usage.firstChild.style.width = Math.min(100, (100 * used) / size).toFixed(1) + '%';
      fill(c[5], [used, size, i.datadir, i.datadir_on_tmpfs].join('|'),
        document.createTextNode(size ? `${fmtBytes(used)} of ${fmtBytes(size)}` : `${fmtBytes(used)} used`), usage,
        i.datadir_on_tmpfs ? sub('on tmpfs') : h('span', { class: 'sub warn-text', text: 'not on tmpfs' }),
        h('span', { class: 'sub mono', title: i.datadir, text: i.datadir }));
      setText(c[6], i.databases);
      fill(c[7], i.started_at || '', since(i.started_at));
    });
    $('servers-empty').hidden = list.length > 0;
    $('tmpfs-note').hidden = !sizeMissing;
  }

  // ---- templates and pools ----

  const stateClass = { READY: 'ok', BUILDING: 'info', FAILED: 'bad' };
  // A build's phases (BuildTimings), in order. A template restored from the
  // cache has restore in place of migrate, seed and capture; one built has
  // no restore.
  const PHASES = [['provision', 'provision_ms'], ['restore', 'restore_ms'], ['migrate', 'migrate_ms'], ['seed', 'seed_ms'],
    ['capture', 'capture_ms'], ['clone', 'clone_ms']];
  const CACHE_SKIPS = new Set(['migrate', 'seed', 'capture']);

  function poolBar(p) {
    const parts = [['ready', num(p.ready)], ['leased', num(p.leased)], ['resetting', num(p.resetting)], ['creating', num(p.creating)]];
    const total = parts.reduce((a, [, n]) => a + n, 0);
    const target = num(p.target);
    const scale = Math.max(total, target, 1);
    const bar = svg('svg', { class: 'bar', viewBox: '0 0 100 14', preserveAspectRatio: 'none', 'aria-hidden': 'true' },
      svg('rect', { class: 'track', x: 0, y: 0, width: 100, height: 14, rx: 2 }));
    let x = 0;
    for (const [cls, n] of parts) {
      if (!n) continue;
      const w = (100 * n) / scale;
      bar.append(svg('rect', { class: cls, x: x.toFixed(2), y: 0, width: w.toFixed(2), height: 14 }, svg('title', { text: `${n} ${cls}` })));
      x += w;
    }
    if (target) {
      const tx = Math.min(99.4, (100 * target) / scale);
      bar.append(svg('line', { class: 'target', x1: tx, x2: tx, y1: 0, y2: 14, 'vector-effect': 'non-scaling-stroke' }));
    }
    const keys = h('ul', { class: 'keys' },
      ...parts.map(([cls, n]) => h('li', { class: cls }, h('strong', { text: String(n) }), ' ' + cls)),
      h('li', { class: 'target' }, 'target ', h('strong', { text: String(target) })));
    return [bar, keys];
  }

  function buildBar(b, source) {
    const cached = source === 'cache' || num(b.restore_ms) > 0;
    const vals = PHASES.filter(([name]) => (cached ? !CACHE_SKIPS.has(name) : name !== 'restore')).map(([name, f]) => [name, num(b[f])]);
    const sum = vals.reduce((a, [, v]) => a + v, 0);
    const total = num(b.total_ms);
    const scale = Math.max(sum, total, 0.001);
    const bar = svg('svg', { class: 'bar', viewBox: '0 0 100 14', preserveAspectRatio: 'none', 'aria-hidden': 'true' },
      svg('rect', { class: 'track', x: 0, y: 0, width: 100, height: 14, rx: 2 }));
    let x = 0;
    for (const [name, v] of vals) {
      if (v <= 0) continue;
      const w = (100 * v) / scale;
      bar.append(svg('rect', { class: 'p-' + name, x: x.toFixed(2), y: 0, width: w.toFixed(2), height: 14 }, svg('title', { text: `${name} ${fmtMs(v)} ms` })));
      x += w;
    }
    const keys = h('ul', { class: 'keys' },
      ...vals.map(([name, v]) => h('li', { class: 'p-' + name }, name + ' ', h('strong', { text: fmtMs(v) }))),
      h('li', { class: 'total' }, 'total ', h('strong', { text: fmtMs(total) }), ' ms'));
    return [bar, keys];
  }

  function dlRow(dl, label) {
    const dd = h('dd');
    dl.append(h('dt', { text: label }), dd);
    return dd;
  }

  // A name's current build is keyed by the name; its other live builds
  // (another branch's migrations, leasable by hash) by name@hash.
  function cardKey(t) { return t.current === false ? `${t.name}@${shortHash(t.hash)}` : t.name; }

  function newCard(t) {
    const key = cardKey(t);
    const card = h('article', { class: 'card', 'data-key': key, 'data-name': t.name, 'aria-labelledby': 'tpl-' + cssId(key) });
    const r = {};
    r.name = h('h3', { id: 'tpl-' + cssId(key), text: t.current === false ? `${t.name} (older build)` : t.name });
    r.state = h('span', { class: 'badge' });
    r.progress = h('span', { class: 'muted' });
    card.append(h('header', null, r.name, r.state, r.progress));
    r.error = h('p', { class: 'card-error', hidden: true });
    card.append(r.error);
    const dl = h('dl');
    r.hash = dlRow(dl, 'Hash');
    r.hashCode = h('code');
    r.copy = h('button', { type: 'button', class: 'small', 'aria-label': `Copy the full hash of template ${t.name}`, text: 'Copy' });
    r.copy.addEventListener('click', () => copyHash(card, r.copy));
    r.hash.append(h('span', { class: 'hash' }, r.hashCode, r.copy));
    r.engine = dlRow(dl, 'Engine');
    r.source = dlRow(dl, 'Source');
    r.contents = dlRow(dl, 'Contents');
    r.migrations = dlRow(dl, 'Migrations');
    r.server = dlRow(dl, 'Server');
    r.created = dlRow(dl, 'Created');
    card.append(dl);
    r.poolH = h('h4', { text: 'Pool' });
    r.pool = h('div');
    r.buildH = h('h4', { text: 'Build, ms' });
    r.build = h('div');
    card.append(r.poolH, r.pool, r.buildH, r.build);
    r.del = h('button', { type: 'button', class: 'danger', text: 'Delete…', 'aria-label': `Delete template ${t.name}…` });
    r.del.addEventListener('click', () => deleteTemplate(card.dataset.name, r.del));
    card.append(h('div', { class: 'actions' }, r.del));
    card.refs = r;
    return card;
  }

  function cssId(s) { return s.replace(/[^A-Za-z0-9_-]/g, (c) => '_' + c.charCodeAt(0).toString(16)); }

  function updateCard(card, t) {
    const r = card.refs;
    card.dataset.hash = t.hash || '';
    const state = templateState(t.state);
    r.state.className = 'badge ' + (stateClass[state] || '');
    setText(r.state, state);
    const prog = t.progress || {};
    const building = state === 'BUILDING' || prog.phase === 'cloning';
    setText(r.progress, building
      ? (prog.phase ? `${prog.phase}${num(prog.steps) ? ` ${num(prog.step)}/${num(prog.steps)}` : ''}${prog.migration ? ': ' + prog.migration : ''}` +
        (num(prog.elapsed_ms) ? ` (${(num(prog.elapsed_ms) / 1000).toFixed(1)} s)` : '') : 'building…')
      : '');
    r.error.hidden = !t.error;
    setText(r.error, t.error || '');
    setText(r.hashCode, shortHash(t.hash) || '–');
    r.hashCode.title = t.hash || '';
    r.copy.hidden = !t.hash;
    setText(r.engine, t.engine || '–');
    setText(r.source, { migrations: 'built from its migrations', external: 'built by its own migrator', cache: 'restored from the template cache' }[t.source] || '–');
    const parts = [plural(num(t.tables), 'table')];
    if (num(t.views)) parts.push(plural(num(t.views), 'view'));
    if (num(t.triggers)) parts.push(plural(num(t.triggers), 'trigger'));
    if (num(t.routines)) parts.push(plural(num(t.routines), 'routine'));
    if (num(t.events)) parts.push(plural(num(t.events), 'event'));
    setText(r.contents, state === 'READY' ? parts.join(' · ') : '–');
    const migs = t.migrations || [];
    setText(r.migrations, migs.length ? `${plural(migs.length, 'file')}, goose version ${t.version}` : '–');
    r.migrations.title = migs.join('\n');
    setText(r.server, t.instance_id || '–');
    fill(r.created, t.created_at || '', since(t.created_at), t.created_at ? ' ago' : '');
    const pool = t.pool || {};
    const used = num(pool.ready) + num(pool.leased) + num(pool.resetting) + num(pool.creating);
    r.poolH.hidden = r.pool.hidden = state === 'FAILED' && used === 0; // a failed build has no pool
    fill(r.pool, JSON.stringify(pool), ...poolBar(pool));
    const b = t.build || {};
    r.buildH.hidden = r.build.hidden = !num(b.total_ms);
    fill(r.build, JSON.stringify(b) + t.source, ...buildBar(b, t.source));
  }

  function renderTemplates(list) {
    // The daemon lists a name's current build first, then its older ones.
    list = [...list].sort((a, b) => a.name.localeCompare(b.name) || (b.current === true) - (a.current === true));
    const box = $('templates');
    const old = new Map([...box.children].map((c) => [c.dataset.key, c]));
    let prev = null;
    for (const t of list) {
      const key = cardKey(t);
      let card = old.get(key);
      old.delete(key);
      if (!card) card = newCard(t);
      updateCard(card, t);
      const want = prev ? prev.nextElementSibling : box.firstElementChild;
      if (want !== card) box.insertBefore(card, want);
      prev = card;
    }
    for (const card of old.values()) {
      if (card.contains(document.activeElement)) {
        const heading = $('templates-h');
        heading.tabIndex = -1;
        heading.focus();
      }
      card.remove();
    }
    $('templates-empty').hidden = list.length > 0;
  }

  async function copyHash(card, btn) {
    const text = card.dataset.hash;
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch (e) { ok = false; }
    if (!ok) {
      const ta = h('textarea', { readonly: true, class: 'visually-hidden' });
      ta.value = text;
      document.body.append(ta);
      ta.select();
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      ta.remove();
      btn.focus();
    }
    setText(btn, ok ? 'Copied' : 'Copy failed');
    announce(ok ? 'Hash copied.' : 'Could not copy the hash: ' + text);
    setTimeout(() => setText(btn, 'Copy'), 1500);
  }

  // ---- leases ----

  function renderLeases(list) {
    list = [...list].sort((a, b) => (a.acquired_at || '').localeCompare(b.acquired_at || '') || a.id.localeCompare(b.id));
    syncTable($('leases'), list, (l) => l.id, (tr, l) => {
      const btn = h('button', { type: 'button', class: 'danger small', text: 'Release…' });
      btn.addEventListener('click', () => releaseLease(tr.dataset.key, btn));
      tr.cells[9].classList.add('actions-cell');
      tr.cells[9].append(btn);
      tr.releaseButton = btn;
    }, (c, l, tr) => {
      fill(c[0], l.id, h('code', { text: l.id }));
      fill(c[1], l.template + l.template_hash, document.createTextNode(l.template), l.template_hash ? h('span', { class: 'sub mono', title: l.template_hash, text: shortHash(l.template_hash) }) : null);
      setText(c[2], l.worker || '–');
      const st = strategyName(l.strategy);
      fill(c[3], st, h('span', { class: 'strategy ' + st, text: st }));
      fill(c[4], l.database, h('code', { text: l.database }));
      fill(c[5], l.instance_id + l.host + l.port, document.createTextNode(l.instance_id), sub(`${l.host}:${l.port}`));
      fill(c[6], l.acquired_at || '', since(l.acquired_at));
      fill(c[7], `${l.expires_at}|${l.ttl_seconds}`, ttlCell(l.expires_at, l.ttl_seconds));
      setText(c[8], num(l.resets).toLocaleString('en'));
      tr.releaseButton.setAttribute('aria-label', `Release lease ${l.id} (worker ${l.worker || 'none'}, database ${l.database})…`);
    });
    $('leases-empty').hidden = list.length > 0;
  }

  // Leases that left the list without this page releasing them: asked
  // about once (GET /v1/leases/{id}), and listed with why when testdbd
  // ended them (their TTL, their space, their server, a restart).
  const ENDED_MAX = 20; // rows kept, newest first
  const ENDED_ASK_MAX = 20; // leases asked about per poll
  let ended = [];
  const releasedHere = new Set();

  async function findEnded(before, now) {
    const still = new Set(now.map((l) => l.id));
    const gone = before.filter((l) => !still.has(l.id) && !releasedHere.has(l.id)).slice(0, ENDED_ASK_MAX);
    const found = await Promise.all(gone.map(async (l) => {
      try {
        return await api('GET', '/v1/leases/' + encodeURIComponent(l.id));
      } catch (e) {
        if (e instanceof AuthError) throw e;
        return null; // forgotten by the daemon, or not reachable: nothing to say
      }
    }));
    for (const l of found) {
      if (!l || !l.state || l.state === 'active') continue;
      const why = l.ended_reason || '';
      if (l.state === 'released' && (why === '' || why.startsWith('released'))) continue; // its holder gave it back
      const seen = gone.find((g) => g.id === l.id) || {};
      ended = [{ id: l.id, template: l.template || seen.template, database: l.database || seen.database, state: l.state, why },
        ...ended.filter((x) => x.id !== l.id)].slice(0, ENDED_MAX);
    }
    renderEnded();
  }

  function renderEnded() {
    syncTable($('ended'), ended, (l) => l.id, null, (c, l) => {
      fill(c[0], l.id, h('code', { text: l.id }));
      setText(c[1], l.template || '–');
      fill(c[2], l.database || '', l.database ? h('code', { text: l.database }) : document.createTextNode('–'));
      fill(c[3], l.state, h('span', { class: 'badge ' + (l.state === 'failed' ? 'bad' : 'warn'), text: l.state }));
      setText(c[4], l.why);
    });
    $('ended-empty').hidden = ended.length > 0;
  }

  function ttlCell(expires, ttl) {
    const wrap = h('span', { class: 'ttl', 'data-expires': expires || '', 'data-ttl': num(ttl) });
    const text = h('span', { class: 'ttl-text' });
    const bar = h('span', { class: 'ttl-bar', role: 'presentation' }, h('span'));
    wrap.append(text, bar);
    updateTTL(wrap);
    return wrap;
  }

  function updateTTL(wrap) {
    const exp = Date.parse(wrap.dataset.expires);
    if (Number.isNaN(exp)) { setText(wrap.firstChild, '–'); return; }
    const left = exp - now();
    const ttl = num(wrap.dataset.ttl) * 1000;
    const low = left < 30000 || (ttl && left < ttl * 0.1);
    wrap.classList.toggle('low', low);
    wrap.lastChild.classList.toggle('low', low);
    setText(wrap.firstChild, left <= 0 ? 'expiring' : fmtDuration(left));
    const frac = ttl ? Math.max(0, Math.min(1, left / ttl)) : 0;
    wrap.lastChild.firstChild.style.width = (frac * 100).toFixed(1) + '%';
  }

  // tick refreshes ages and countdowns every second, between polls.
  function tick() {
    for (const e of document.querySelectorAll('[data-since]')) {
      if (e.dataset.since) setText(e, ago(e.dataset.since, e.dataset.prefix));
    }
    for (const e of document.querySelectorAll('.ttl[data-expires]')) updateTTL(e);
  }

  // ---- latency ----

  function latencyRows(st) {
    const rows = STRATEGIES.map((s) => {
      const r = (st.resets || []).find((x) => x.strategy === s) || {};
      return { key: strategyName(s), label: 'reset ' + strategyName(s), lat: r.latency || {}, fallbacks: num(r.fallbacks), failures: num(r.failures) };
    });
    rows.push({ key: 'acquire', label: 'acquire', lat: st.acquire || {}, fallbacks: null, failures: null });
    rows.push({ key: 'wait', label: 'acquire wait', lat: st.acquire_wait || {}, fallbacks: null, failures: null });
    return rows;
  }

  function niceCeil(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  function renderLatencyChart(rows) {
    const chart = $('latency-chart');
    // Drawn for the width it gets, so that its text stays readable in a
    // narrow window (where the p50 column is left to the table below).
    const W = Math.round(Math.max(300, Math.min(760, chart.clientWidth || 560)));
    const labelW = 104, valueW = W < 440 ? 0 : 118, top = 22, rowH = 28;
    const plotW = W - labelW - valueW;
    const H = top + rows.length * rowH + 4;
    const axis = niceCeil(Math.max(...rows.map((r) => num(r.lat.p99_ms)), 0.1) * 1.05);
    const x = (v) => labelW + Math.min(plotW, (plotW * num(v)) / axis);
    const kids = [];
    for (let i = 0; i <= 4; i++) {
      const v = (axis * i) / 4;
      const gx = labelW + (plotW * i) / 4;
      kids.push(svg('line', { class: 'grid', x1: gx, x2: gx, y1: top - 4, y2: H - 2 }));
      kids.push(svg('text', { class: 'axis', x: gx, y: 12, 'text-anchor': i === 0 ? 'start' : i === 4 ? 'end' : 'middle', text: String(Number(v.toPrecision(3))) + (i === 4 ? ' ms' : '') }));
    }
    rows.forEach((r, i) => {
      const y = top + i * rowH;
      const cls = 's-' + r.key;
      kids.push(svg('text', { x: 0, y: y + 17, text: r.label }));
      if (!num(r.lat.count)) {
        kids.push(svg('text', { class: 'axis', x: labelW + 6, y: y + 17, text: 'no samples yet' }));
        return;
      }
      const l = r.lat;
      kids.push(svg('rect', { class: cls + ' p99', x: labelW, y: y + 5, width: Math.max(1, x(l.p99_ms) - labelW), height: 16, rx: 2 }));
      kids.push(svg('rect', { class: cls + ' p90', x: labelW, y: y + 5, width: Math.max(1, x(l.p90_ms) - labelW), height: 16, rx: 2 }));
      kids.push(svg('rect', { class: cls, x: labelW, y: y + 5, width: Math.max(1, x(l.p50_ms) - labelW), height: 16, rx: 2 },
        svg('title', { text: `${r.label}: p50 ${fmtMs(l.p50_ms)}, p90 ${fmtMs(l.p90_ms)}, p99 ${fmtMs(l.p99_ms)}, max ${fmtMs(l.max_ms)} ms` })));
      const mx = x(l.max_ms);
      kids.push(svg('line', { class: cls + ' max', x1: mx, x2: mx, y1: y + 2, y2: y + 24 }));
      if (valueW) kids.push(svg('text', { x: W - valueW + 8, y: y + 17, text: `p50 ${fmtMs(l.p50_ms)} ms` }));
    });
    chart.setAttribute('viewBox', `0 0 ${W} ${H}`);
    const summary = rows.filter((r) => num(r.lat.count)).map((r) => `${r.label} p50 ${fmtMs(r.lat.p50_ms)} ms, p99 ${fmtMs(r.lat.p99_ms)} ms`).join('; ');
    chart.setAttribute('aria-label', 'Latency percentiles. ' + (summary || 'No samples yet.'));
    replaceKids(chart, ...kids);
  }

  function renderLatencyTable(rows) {
    syncTable($('latency'), rows, (r) => r.key, null, (c, r) => {
      const l = r.lat;
      const none = !num(l.count);
      fill(c[0], r.key, r.key === 'acquire' || r.key === 'wait' ? document.createTextNode(r.label) : h('span', { class: 'strategy ' + r.key, text: r.label }));
      setText(c[1], num(l.count).toLocaleString('en'));
      setText(c[2], none ? '–' : fmtMs(l.p50_ms));
      setText(c[3], none ? '–' : fmtMs(l.p90_ms));
      setText(c[4], none ? '–' : fmtMs(l.p99_ms));
      setText(c[5], none ? '–' : fmtMs(l.max_ms));
      setText(c[6], r.fallbacks == null ? '' : r.fallbacks);
      setText(c[7], r.failures == null ? '' : r.failures);
    });
  }

  function recordHistory(st) {
    const p = { t: now() };
    for (const r of latencyRows(st)) p[r.key] = num(r.lat.count) ? num(r.lat.p50_ms) : null;
    history.push(p);
    if (history.length > HISTORY_MAX) history.splice(0, history.length - HISTORY_MAX);
  }

  function renderSparkline() {
    const el = $('sparkline');
    const keys = ['truncate', 'snapshot', 'rollback', 'acquire'];
    const W = 300, H = 90, pad = 6;
    const vals = history.flatMap((p) => keys.map((k) => p[k]).filter((v) => v != null));
    const ymax = niceCeil(Math.max(...vals, 0.1));
    const t0 = history.length ? history[0].t : 0;
    const span = Math.max(10000, history.length ? history[history.length - 1].t - t0 : 0);
    const kids = [];
    for (const k of keys) {
      let pts = [];
      const flush = () => {
        if (pts.length === 1) pts.push([pts[0][0] + 2, pts[0][1]]); // a lone sample still shows
        if (pts.length) kids.push(svg('polyline', { class: 's-' + k, points: pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ') }));
        pts = [];
      };
      for (const p of history) {
        if (p[k] == null) { flush(); continue; }
        pts.push([((p.t - t0) / span) * W, H - pad - (p[k] / ymax) * (H - 2 * pad)]);
      }
      flush();
    }
    replaceKids(el, ...kids);
    const last = history[history.length - 1] || {};
    const minutes = history.length > 1 ? fmtDuration(history[history.length - 1].t - t0) : '0 s';
    setText($('spark-span'), `(the last ${minutes}, scale 0–${fmtMs(ymax)} ms)`);
    el.setAttribute('aria-label', 'p50 latency over time. Latest: ' +
      keys.map((k) => `${k} ${last[k] == null ? 'no samples' : fmtMs(last[k]) + ' ms'}`).join(', ') + '.');
    fill($('spark-legend'), keys.map((k) => `${k}${last[k]}`).join(),
      ...keys.map((k) => h('li', { class: 's-' + k, text: `${k === 'acquire' ? 'acquire' : k} ${last[k] == null ? '–' : fmtMs(last[k]) + ' ms'}` })));
  }

  // ---- recent resets and errors (GET /v1/events) ----

  function renderEventsUnavailable() {
    for (const id of ['events-unavailable', 'events-unavailable-2']) {
      $(id).hidden = false;
      setText($(id), events.note);
    }
    $('resets').hidden = $('events').hidden = true;
    $('resets-empty').hidden = $('events-empty').hidden = true;
  }

  function renderEvents(ev) {
    $('events-unavailable').hidden = $('events-unavailable-2').hidden = true;
    const resets = ev.resets || [];
    syncTable($('resets'), resets, (e) => String(e.seq), null, (c, e) => {
      const rep = e.report || {};
      fill(c[0], e.at || '', document.createTextNode(fmtClock(e.at)), h('span', { class: 'sub' }, since(e.at), ' ago'));
      setText(c[1], e.template || '–');
      fill(c[2], (rep.database || '') + (rep.lease_id || '') + (e.instance_id || ''), h('code', { text: rep.database || '–' }),
        rep.lease_id ? sub('lease ' + rep.lease_id) : null, e.instance_id ? sub(e.instance_id) : null);
      setText(c[3], e.trigger || '–');
      const ran = strategyName(rep.strategy), asked = strategyName(rep.requested_strategy);
      fill(c[4], ran + asked, h('span', { class: 'strategy ' + ran, text: ran }),
        asked !== ran && asked !== 'unspecified' ? sub('asked: ' + asked) : null);
      setText(c[5], fmtMs(rep.total_ms));
      const tables = rep.tables_reset || [];
      fill(c[6], tables.join() + rep.tables_total,
        document.createTextNode(`${tables.length} of ${num(rep.tables_total)}`),
        tables.length ? h('span', { class: 'sub', title: tables.join(', '), text: tables.slice(0, 6).join(', ') + (tables.length > 6 ? ', …' : '') }) : null);
      const schema = rep.schema_changes || [];
      fill(c[7], (e.error || '') + (rep.fallback_reason || '') + schema.join(),
        e.error ? h('span', { class: 'error-text', text: e.error }) : null,
        rep.fallback_reason ? h('span', { class: 'sub', text: rep.fallback_reason }) : null,
        schema.length ? sub('schema: ' + schema.join(', ')) : null);
    });
    $('resets-empty').hidden = resets.length > 0;

    const list = ev.events || [];
    syncTable($('events'), list, (e) => String(e.seq), null, (c, e) => {
      fill(c[0], e.at || '', document.createTextNode(fmtClock(e.at)), h('span', { class: 'sub' }, since(e.at), ' ago'));
      fill(c[1], e.level, h('span', { class: 'badge ' + (e.level === 'error' ? 'bad' : 'warn'), text: e.level || '–' }));
      setText(c[2], e.kind || '–');
      setText(c[3], e.message || '');
      const about = [e.template && 'template ' + e.template, e.lease_id && 'lease ' + e.lease_id,
        e.instance_id && 'server ' + e.instance_id, e.database && 'database ' + e.database].filter(Boolean);
      setText(c[4], about.join(', ') || '–');
    });
    $('events-empty').hidden = list.length > 0;
  }

  async function pollEvents() {
    if (events.available === false && Date.now() - events.lastTry < EVENTS_RETRY_MS) return;
    events.lastTry = Date.now();
    try {
      const ev = await api('GET', '/v1/events?limit=50');
      events.available = true;
      renderEvents(ev);
    } catch (e) {
      if (!(e instanceof ApiError) || !(e.status === 501 || e.status === 404 || e.code === 12)) throw e;
      events.available = false;
      events.note = `Not available from this daemon: GET /v1/events answered ${e.status}` +
        (e.code === 12 ? ' (Unimplemented)' : '') + '. A daemon that records its recent resets, errors and warnings lists them here.';
      renderEventsUnavailable();
    }
  }

  // ---- polling ----

  function setConn(state, text) {
    const c = $('conn');
    c.dataset.state = state;
    setText(c, text);
  }

  async function poll() {
    clearTimeout(pollTimer);
    if (paused || needToken || polling || document.hidden) return;
    polling = true;
    try {
      const [inst, tpl, leases, st] = await Promise.all([
        api('GET', '/v1/instances'), api('GET', '/v1/templates'), api('GET', '/v1/leases'), api('GET', '/v1/stats')]);
      const instances = inst.instances || [], templates = tpl.templates || [];
      const before = lastLeases;
      lastLeases = leases.leases || [];
      renderTiles(st, instances, templates, lastLeases);
      renderServers(instances);
      renderTemplates(templates);
      renderLeases(lastLeases);
      await findEnded(before, lastLeases);
      const rows = latencyRows(st);
      renderLatencyChart(rows);
      renderLatencyTable(rows);
      recordHistory(st);
      renderSparkline();
      await pollEvents();
      tokenAccepted();
      setConn('live', 'Live');
      setText($('updated'), 'updated ' + fmtClock(Date.now()));
    } catch (e) {
      if (e instanceof AuthError) askForToken();
      else setConn('error', 'Cannot reach the daemon: ' + (e.message || e));
    } finally {
      polling = false;
      schedule();
    }
  }

  function schedule() {
    clearTimeout(pollTimer);
    if (!paused && !needToken) pollTimer = setTimeout(poll, POLL_MS);
  }

  // ---- token form ----

  function askForToken() {
    const had = !!getToken();
    if (had) setToken('');
    const first = !needToken;
    needToken = true;
    $('auth').hidden = false;
    $('content').hidden = true;
    $('forget-token').hidden = true;
    $('pause').hidden = true;
    setConn('auth', 'Token needed');
    setText($('token-error'), had ? 'The daemon refused that token. Enter the one it was started with (--token).' : '');
    if (first || had) $('token-input').focus();
  }

  function tokenAccepted() {
    const wasAsking = needToken || !$('auth').hidden;
    $('auth').hidden = true;
    $('content').hidden = false;
    $('forget-token').hidden = !getToken();
    $('pause').hidden = false;
    if (wasAsking) announce('Token accepted.');
  }

  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $('token-input');
    const token = input.value.trim();
    if (!token) return;
    input.value = '';
    setToken(token);
    setText($('token-error'), '');
    needToken = false;
    poll().then(() => { if (!needToken) $('main').focus(); });
  });

  $('forget-token').addEventListener('click', () => {
    setToken('');
    needToken = false;
    announce('Token forgotten.');
    poll();
  });

  $('pause').addEventListener('click', () => {
    paused = !paused;
    $('pause').setAttribute('aria-pressed', String(paused));
    if (paused) {
      clearTimeout(pollTimer);
      setConn('paused', 'Paused');
    } else {
      setConn('connecting', 'Resuming…');
      poll();
    }
  });

  document.addEventListener('visibilitychange', () => { if (!document.hidden) poll(); });

  // ---- actions, each behind a confirmation dialog ----

  function confirmAction(title, paragraphs, okLabel) {
    const dlg = $('confirm');
    const opener = document.activeElement;
    setText($('confirm-h'), title);
    replaceKids($('confirm-body'), ...paragraphs.map((p) => h('p', { text: p })));
    setText($('confirm-ok'), okLabel);
    return new Promise((resolve) => {
      let answer = false;
      const ok = () => { answer = true; dlg.close(); };
      const cancel = () => dlg.close();
      const closed = () => {
        $('confirm-ok').removeEventListener('click', ok);
        $('confirm-cancel').removeEventListener('click', cancel);
        if (opener && opener.isConnected) opener.focus();
        resolve(answer);
      };
      $('confirm-ok').addEventListener('click', ok);
      $('confirm-cancel').addEventListener('click', cancel);
      dlg.addEventListener('close', closed, { once: true });
      dlg.showModal();
      $('confirm-cancel').focus();
    });
  }

  async function releaseLease(id, btn) {
    const l = lastLeases.find((x) => x.id === id) || { id };
    const yes = await confirmAction(`Release lease ${id}?`, [
      `Worker ${l.worker || '(none)'} loses database ${l.database || ''} of template ${l.template || ''} at once: ` +
      'its MySQL user is locked and its sessions ended, then the database is reset and goes back to the pool (the next lease gets the user with a new password).',
    ], 'Release lease');
    if (!yes) return;
    btn.disabled = true;
    try {
      await api('DELETE', '/v1/leases/' + encodeURIComponent(id));
      releasedHere.add(id);
      showAlert(`Released lease ${id}.`, true);
      announce(`Released lease ${id}.`);
    } catch (e) {
      btn.disabled = false;
      if (e instanceof AuthError) { askForToken(); return; }
      showAlert(`Could not release lease ${id}: ${e.message}`);
    }
    poll();
  }

  async function deleteTemplate(name, btn) {
    const held = lastLeases.filter((l) => l.template === name);
    const paragraphs = [`Drops template ${name}, its template database and all its worker databases.`];
    let okLabel = 'Delete template';
    if (held.length) {
      paragraphs.push(`${plural(held.length, 'lease is', 'leases are')} held on it (${held.map((l) => l.worker || l.id).join(', ')}). ` +
        'Deleting it anyway (force) ends them: their clients lose their databases.');
      okLabel = `Delete and end ${plural(held.length, 'lease')}`;
    }
    const yes = await confirmAction(`Delete template ${name}?`, paragraphs, okLabel);
    if (!yes) return;
    btn.disabled = true;
    try {
      await api('DELETE', '/v1/templates/' + encodeURIComponent(name) + (held.length ? '?force=true' : ''));
      showAlert(`Deleted template ${name}.`, true);
      announce(`Deleted template ${name}.`);
    } catch (e) {
      btn.disabled = false;
      if (e instanceof AuthError) { askForToken(); return; }
      showAlert(`Could not delete template ${name}: ${e.message}` +
        (e.code === 9 ? ' Leases were acquired meanwhile; try again to end them too.' : ''));
    }
    poll();
  }

  setInterval(tick, 1000);
  poll();
})();
