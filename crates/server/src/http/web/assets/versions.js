// kcoord's web page, each streams group's topology versions: polls .../topology/versions for
// every group section app.js drew, flags a group whose running topology has no stored
// description while an older one is stored, and, in the group's "Versions" panel, lists the
// versions and what changed between two chosen ones (.../topology/diff).
//
// Data from the server is only ever put into the page as text (textContent), never as HTML.
'use strict';

(() => {
  const POLL_MS = 3000;
  /** groupId -> { panel, from, to, diffKey }: the user's choice survives the polls. */
  const state = new Map();

  const { el, getJson } = window.kcoordPage;

  const groupPath = (id) => `api/v1/groups/${encodeURIComponent(id)}/topology`;
  const shortId = (id) => id.slice(0, 8);
  const when = (ms) => (ms === null ? '(before versions were kept)' : new Date(ms).toLocaleString());

  /** The group's versions panel, added once to the section app.js made. */
  function panelOf(section) {
    const id = section.dataset.group;
    let entry = state.get(id);
    if (!entry || !entry.panel.isConnected) {
      const panel = el('details', { class: 'versions' },
        el('summary', {}, 'Versions'),
        el('div', { class: 'version-list' }),
        el('div', { class: 'diff' }));
      const stale = el('p', { class: 'stale', hidden: '' });
      const body = section.querySelector('details > div');
      body.prepend(stale);
      body.append(panel);
      entry = { panel, stale, from: null, to: null, diffKey: null };
      state.set(id, entry);
      panel.addEventListener('toggle', () => refresh(section));
      panel.addEventListener('change', () => chosen(section, entry));
    }
    return entry;
  }

  async function refresh(section) {
    const id = section.dataset.group;
    const entry = panelOf(section);
    let doc;
    try {
      doc = await getJson(`${groupPath(id)}/versions`);
    } catch (e) {
      entry.stale.hidden = true;
      entry.panel.querySelector('.version-list').replaceChildren(el('p', { class: 'error' }, `Cannot read the versions: ${e.message}`));
      return;
    }
    showStale(entry, doc);
    if (!entry.panel.open) {
      return;
    }
    renderList(entry, doc);
    await renderDiff(section, entry);
  }

  function showStale(entry, doc) {
    entry.stale.hidden = !doc.topologyStale;
    entry.stale.textContent = doc.topologyStale
      ? `The running members' topology (version ${shortId(doc.topologyDescriptionId)}) differs from the last stored description (version ${shortId(doc.storedTopologyDescriptionId)}): no member has pushed the new one yet.`
      : '';
  }

  /** The versions, newest first, with a choice of the two to compare. */
  function renderList(entry, doc) {
    const versions = doc.versions.slice().reverse();
    const ids = versions.map((v) => v.topologyDescriptionId);
    if (!ids.includes(entry.to)) entry.to = ids[0] || null;
    if (!ids.includes(entry.from)) entry.from = ids[1] || null;
    // Radio groups are per document: each group's pair gets names of its own.
    const radio = (role, v) => {
      const input = el('input', { type: 'radio', name: `${role} ${doc.groupId}`, value: v.topologyDescriptionId, 'aria-label': `${role} ${v.topologyDescriptionId}` });
      input.dataset.role = role;
      input.checked = entry[role] === v.topologyDescriptionId;
      input.disabled = v.topologyDescriptionStatus !== 'AVAILABLE';
      return input;
    };
    const rows = versions.map((v) => {
      const row = el('tr', {},
        el('td', {}, radio('from', v)), el('td', {}, radio('to', v)),
        el('td', { title: v.topologyDescriptionId }, shortId(v.topologyDescriptionId), v.current ? ' (running)' : ''),
        el('td', {}, String(v.topologyEpoch)),
        el('td', {}, when(v.mintedMs)),
        el('td', {}, v.topologyDescriptionStatus === 'AVAILABLE' ? 'stored' : v.topologyDescriptionStatus.toLowerCase().replace('_', ' ')));
      row.dataset.id = v.topologyDescriptionId;
      return row;
    });
    entry.panel.querySelector('.version-list').replaceChildren(el('table', {},
      el('thead', {}, el('tr', {}, ...['From', 'To', 'Version', 'Topology epoch', 'Minted', 'Description'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, ...rows)));
  }

  function chosen(section, entry) {
    for (const name of ['from', 'to']) {
      const checked = entry.panel.querySelector(`input[data-role=${name}]:checked`);
      if (checked) entry[name] = checked.value;
    }
    renderDiff(section, entry);
  }

  const SECTIONS = [
    ['subtopologies', 'Sub-topologies', 'subtopology'],
    ['nodes', 'Nodes', 'node'],
    ['edges', 'Edges', 'edge'],
    ['topics', 'Topics', 'topic'],
    ['stateStores', 'State stores', 'store'],
  ];

  /** One change as text: a name, a node with what changed, an edge, a topic's users. */
  function label(kind, how, item) {
    if (typeof item === 'string') return item;
    if (kind === 'edge') return `${item.from} → ${item.to}`;
    if (kind === 'node') {
      const place = `${item.type.toLowerCase()} in ${item.subtopology === 'global' ? 'a global store' : `sub-topology ${item.subtopology}`}`;
      return how === 'changed' ? `${item.name} (${place}; ${item.changes.join(', ')} changed)` : `${item.name} (${place})`;
    }
    return `${item.name}: used by ${item.before.join(', ') || 'nothing'}, now by ${item.after.join(', ') || 'nothing'}`;
  }

  async function renderDiff(section, entry) {
    const target = entry.panel.querySelector('.diff');
    if (!entry.from || !entry.to) {
      target.replaceChildren(el('p', { class: 'hint' }, 'Two stored versions are needed to compare.'));
      entry.diffKey = null;
      return;
    }
    const key = `${entry.from} ${entry.to}`;
    if (key === entry.diffKey) {
      return;
    }
    let diff;
    try {
      diff = await getJson(`${groupPath(section.dataset.group)}/diff?from=${entry.from}&to=${entry.to}`);
    } catch (e) {
      target.replaceChildren(el('p', { class: 'error' }, `Cannot compare: ${e.message}`));
      return;
    }
    entry.diffKey = key;
    const blocks = SECTIONS.map(([field, title, kind]) => {
      const items = ['added', 'removed', 'changed'].flatMap((how) => (diff[field][how] || []).map((item) => {
        const li = el('li', { class: how }, `${{ added: '+', removed: '−', changed: '~' }[how]} ${label(kind, how, item)}`);
        li.dataset.kind = kind;
        li.dataset.name = typeof item === 'string' ? item : (item.name || `${item.from}->${item.to}`);
        return li;
      }));
      return items.length ? [el('h4', {}, title), el('ul', {}, ...items)] : [];
    }).flat();
    target.dataset.from = entry.from;
    target.dataset.to = entry.to;
    target.replaceChildren(
      el('p', { class: 'meta' }, `From version ${shortId(entry.from)} (topology epoch ${diff.from.topologyEpoch}) to ${shortId(entry.to)} (topology epoch ${diff.to.topologyEpoch})`),
      ...(blocks.length ? blocks : [el('p', { class: 'hint' }, 'No differences.')]));
  }

  /** Each round reads the versions of the groups whose panel is open; every
   * STALE_EVERY-th round also the others', for the stale flag: every version is a plugin read,
   * and a closed panel needs only the flag. */
  const STALE_EVERY = 4;
  let round = 0;

  async function poll() {
    try {
      const sections = Array.from(document.querySelectorAll('#groups section.group'));
      const all = round % STALE_EVERY === 0;
      round += 1;
      for (const section of sections) {
        const entry = state.get(section.dataset.group);
        if (all || !entry || entry.panel.open) {
          await refresh(section);
        }
      }
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  poll();
})();
