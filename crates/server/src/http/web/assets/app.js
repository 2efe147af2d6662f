// kcoord's web page: polls the JSON API (/api/v1/...), lists the streams groups and inlines each
// group's topology drawing (topology.svg) so that its nodes can be clicked; the details of the
// clicked node come from the group's topology description (.../topology).
//
// Data from the server is only ever put into the page as text (textContent, setAttribute) or,
// for the drawings, as a parsed SVG document: never as HTML.
'use strict';

(() => {
  /** How often the page asks again, counted from the end of the previous round. */
  const POLL_MS = 3000;
  /** Topology reads running at once, so that a hundred groups do not fire a hundred requests. */
  const PARALLEL_READS = 4;
  const SVG_NS = 'http://www.w3.org/2000/svg';

  /** groupId -> { section, key (the description last drawn, as JSON), index }. */
  const groups = new Map();
  /** What the user clicked: { group, kind, name }; kept across refreshes. */
  let selection = null;

  const groupsMain = document.getElementById('groups');
  const listBody = document.querySelector('#group-list tbody');
  const listEmpty = document.querySelector('#group-list .empty');
  const details = document.getElementById('details');
  const status = document.getElementById('status');

  // ---- Talking to the API ---------------------------------------------------------------

  class ApiError extends Error {
    constructor(httpStatus, body) {
      super(body && body.message ? `${body.error}: ${body.message}` : `HTTP ${httpStatus}`);
      this.error = body && body.error;
    }
  }

  async function request(path) {
    const response = await fetch(path, { cache: 'no-store' });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new ApiError(response.status, body);
    }
    return response;
  }

  const getJson = async (path) => (await request(path)).json();
  const getText = async (path) => (await request(path)).text();
  const groupPath = (id) => `api/v1/groups/${encodeURIComponent(id)}`;

  // ---- Building elements ----------------------------------------------------------------

  const { el } = window.kcoordPage;

  function stateBadge(state) {
    return el('span', { class: `state ${state}` }, state);
  }

  // ---- The list of groups and their sections --------------------------------------------

  async function poll() {
    try {
      const list = await getJson('api/v1/groups');
      renderList(list.groups);
      const sections = list.groups.map(sectionFor);
      removeVanished(new Set(list.groups.map((g) => g.groupId)));
      place(sections);
      await inParallel(sections, refreshTopology);
      status.className = '';
      status.textContent = `${list.groups.length} streams group${list.groups.length === 1 ? '' : 's'}, updated ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      status.className = 'error';
      status.textContent = `Cannot read the groups: ${e.message}`;
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  async function inParallel(items, work) {
    const queue = items.slice();
    const worker = async () => {
      while (queue.length > 0) {
        await work(queue.shift());
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_READS }, worker));
  }

  function renderList(listed) {
    listBody.replaceChildren(...listed.map((g) => el('tr', {},
      el('td', {}, el('a', { href: `#${sectionId(g.groupId)}` }, g.groupId)),
      el('td', {}, stateBadge(g.groupState)),
      el('td', {}, g.error ? '–' : String(g.memberCount)))));
    listEmpty.hidden = listed.length > 0;
  }

  const sectionId = (id) => `group-${encodeURIComponent(id)}`;

  /** The group's section, created on first sight, its heading brought up to date. */
  function sectionFor(g) {
    let entry = groups.get(g.groupId);
    if (!entry) {
      const section = el('section', { class: 'group', id: sectionId(g.groupId) });
      section.dataset.group = g.groupId;
      const summary = el('summary', {});
      const toolButton = (action, label, title) => {
        const button = el('button', { type: 'button', title }, label);
        button.dataset.zoom = action;
        return button;
      };
      const body = el('div', {},
        el('p', { class: 'topology-status' }),
        el('div', { class: 'toolbar', hidden: '' },
          toolButton('out', '−', 'Zoom out'), toolButton('in', '+', 'Zoom in'),
          toolButton('actual', '100%', 'Actual size'), toolButton('fit', 'Fit', 'Fit the width'),
          el('span', { class: 'zoom-level' })),
        el('div', { class: 'drawing' }));
      section.append(el('details', { open: '' }, summary, body));
      entry = { section, key: null, index: null, zoom: 1, natural: null };
      groups.set(g.groupId, entry);
    }
    const heading = [el('h2', {}, g.groupId), stateBadge(g.groupState), ' '];
    const meta = g.error
      ? el('span', { class: 'meta' }, `${g.error.error}: ${g.error.message}`)
      : el('span', { class: 'meta' }, [
        `${g.memberCount} member${g.memberCount === 1 ? '' : 's'}`,
        `group epoch ${g.groupEpoch}`,
        `target assignment epoch ${g.targetAssignmentEpoch}`,
        `topology epoch ${g.topologyEpoch ?? '–'}`,
      ].join(' · '));
    entry.section.querySelector('summary').replaceChildren(...heading, meta);
    entry.listing = g;
    return entry;
  }

  /** Puts the sections in the server's order, moving only those out of place: a moved
   * element loses its scroll position, and the user's place in a drawing must survive. */
  function place(entries) {
    let previous = null;
    for (const entry of entries) {
      const wanted = previous ? previous.nextSibling : groupsMain.firstChild;
      if (entry.section !== wanted) {
        groupsMain.insertBefore(entry.section, wanted);
      }
      previous = entry.section;
    }
  }

  function removeVanished(present) {
    for (const [id, entry] of groups) {
      if (!present.has(id)) {
        entry.section.remove();
        groups.delete(id);
        if (selection && selection.group === id) {
          showDetails();
        }
      }
    }
  }

  // ---- One group's topology -------------------------------------------------------------

  const STATUS_TEXT = {
    NOT_STORED: 'No topology description has been recorded for this group: no member has pushed one yet, or the coordinator has no topology description plugin.',
    ERROR: 'The coordinator could not read this group\'s topology description; its log says why.',
  };

  async function refreshTopology(entry) {
    const details = entry.section.querySelector('details');
    if (!details.open || entry.listing.error) {
      setTopologyStatus(entry, entry.listing.error ? 'The group could not be described.' : '', !!entry.listing.error);
      return;
    }
    const id = entry.section.dataset.group;
    try {
      const doc = await getJson(`${groupPath(id)}/topology`);
      if (doc.topologyDescriptionStatus !== 'AVAILABLE') {
        setTopologyStatus(entry, STATUS_TEXT[doc.topologyDescriptionStatus] || doc.topologyDescriptionStatus,
          doc.topologyDescriptionStatus === 'ERROR');
        clearDrawing(entry);
        return;
      }
      const key = JSON.stringify(doc.topologyDescription);
      if (key !== entry.key) {
        const svg = parseSvg(await getText(`${groupPath(id)}/topology.svg`));
        draw(entry, svg, index(doc.topologyDescription));
        entry.key = key;
      }
      setTopologyStatus(entry, '', false);
    } catch (e) {
      setTopologyStatus(entry, `Cannot read the topology: ${e.message}`, true);
    }
  }

  function setTopologyStatus(entry, text, isError) {
    const p = entry.section.querySelector('.topology-status');
    p.textContent = text;
    p.classList.toggle('error', isError);
  }

  function clearDrawing(entry) {
    entry.section.querySelector('.drawing').replaceChildren();
    entry.section.querySelector('.toolbar').hidden = true;
    entry.key = null;
    entry.index = null;
    if (selection && selection.group === entry.section.dataset.group) {
      showDetails();
    }
  }

  function parseSvg(text) {
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const root = doc.documentElement;
    if (root.namespaceURI !== SVG_NS || doc.getElementsByTagName('parsererror').length > 0) {
      throw new Error('the drawing is not an SVG document');
    }
    return root;
  }

  function draw(entry, svg, topologyIndex) {
    const drawing = entry.section.querySelector('.drawing');
    const node = document.importNode(svg, true);
    for (const g of node.querySelectorAll('g.node')) {
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', `${g.dataset.kind} ${g.dataset.name}`);
    }
    const first = entry.natural === null;
    entry.natural = {
      width: parseFloat(node.getAttribute('width')) || 0,
      height: parseFloat(node.getAttribute('height')) || 0,
    };
    drawing.replaceChildren(node);
    entry.section.querySelector('.toolbar').hidden = false;
    applyZoom(entry);
    if (first) {
      revealStart(entry);
    }
    entry.index = topologyIndex;
    const group = entry.section.dataset.group;
    entry.section.dataset.nodes = String(node.querySelectorAll('g.node').length);
    // After the next frame has been painted: what the benchmark times.
    requestAnimationFrame(() => requestAnimationFrame(() => {
      performance.mark(`kcoord:drawn:${group}`);
    }));
    if (selection && selection.group === group) {
      showDetails(selection);
    }
  }

  // ---- Zoom and scroll ------------------------------------------------------------------

  const ZOOM_STEP = 1.25;
  const MIN_ZOOM = 0.1;
  const MAX_ZOOM = 4;

  /** Sizes the drawing at the entry's zoom (its viewBox scales the content). */
  function applyZoom(entry) {
    const svg = entry.section.querySelector('.drawing svg');
    if (!svg || !entry.natural) {
      return;
    }
    svg.setAttribute('width', String(entry.natural.width * entry.zoom));
    svg.setAttribute('height', String(entry.natural.height * entry.zoom));
    entry.section.querySelector('.zoom-level').textContent = `${Math.round(entry.zoom * 100)}%`;
  }

  function zoom(entry, action) {
    const drawing = entry.section.querySelector('.drawing');
    const before = entry.zoom;
    if (action === 'in') entry.zoom = Math.min(MAX_ZOOM, entry.zoom * ZOOM_STEP);
    if (action === 'out') entry.zoom = Math.max(MIN_ZOOM, entry.zoom / ZOOM_STEP);
    if (action === 'actual') entry.zoom = 1;
    if (action === 'fit' && entry.natural && entry.natural.width > 0) {
      entry.zoom = Math.min(1, (drawing.clientWidth - 2) / entry.natural.width);
    }
    // Keep the middle of the view where it was.
    const ratio = entry.zoom / before;
    const middleX = (drawing.scrollLeft + drawing.clientWidth / 2) * ratio;
    const middleY = (drawing.scrollTop + drawing.clientHeight / 2) * ratio;
    applyZoom(entry);
    drawing.scrollLeft = middleX - drawing.clientWidth / 2;
    drawing.scrollTop = middleY - drawing.clientHeight / 2;
  }

  /** A large drawing opens where it starts: its first source at the top, centred. */
  function revealStart(entry) {
    const drawing = entry.section.querySelector('.drawing');
    const start = drawing.querySelector('g.node[data-kind="source"]') || drawing.querySelector('g.node');
    if (!start) {
      return;
    }
    const view = drawing.getBoundingClientRect();
    const box = start.getBoundingClientRect();
    drawing.scrollLeft += box.left - view.left - (view.width - box.width) / 2;
    // Room above it for the topics it reads.
    drawing.scrollTop += box.top - view.top - 120;
  }

  /** Looks up for the details panel: nodes by name, and who uses each topic and store. */
  function index(description) {
    const nodes = new Map();
    const topics = new Map();
    const stores = new Map();
    const use = (map, name, role, node) => {
      if (!map.has(name)) {
        map.set(name, {});
      }
      const uses = map.get(name);
      (uses[role] = uses[role] || []).push(node);
    };
    const add = (node, block) => {
      nodes.set(node.name, { node, block });
      for (const topic of node.topics || []) use(topics, topic, 'Read by', node.name);
      if (node.topic) use(topics, node.topic, 'Written by', node.name);
      for (const store of node.stores || []) use(stores, store, 'Used by', node.name);
    };
    for (const s of description.subtopologies) {
      for (const node of s.nodes) add(node, `Sub-topology ${s.id}`);
    }
    description.globalStores.forEach((g, i) => {
      const block = `Global store ${i + 1}`;
      add(g.source, block);
      add(g.processor, block);
    });
    return { nodes, topics, stores };
  }

  // ---- Selecting a node and showing its details -----------------------------------------

  const { cssString } = window.kcoordPage;

  function nodeElement(sel) {
    const entry = groups.get(sel.group);
    return entry && entry.section.querySelector(
      `.drawing g.node[data-kind=${cssString(sel.kind)}][data-name=${cssString(sel.name)}]`);
  }

  function select(sel) {
    for (const g of document.querySelectorAll('.drawing g.node.selected')) {
      g.classList.remove('selected');
    }
    selection = sel;
    showDetails(sel);
  }

  /** Fills the panel for `sel` (or the hint without one), and marks its node. */
  function showDetails(sel) {
    if (!sel) {
      selection = null;
      details.replaceChildren(el('p', { class: 'hint' }, 'Click a node of a drawing to see its details.'));
      return;
    }
    const element = nodeElement(sel);
    if (element) {
      element.classList.add('selected');
    }
    const entry = groups.get(sel.group);
    const rows = entry && entry.index ? describe(entry.index, sel) : null;
    const list = el('dl', {}, ...[
      ['Group', sel.group],
      ['Kind', sel.kind],
      ...(rows || [['', `No longer in the topology of ${sel.group}.`]]),
    ].flatMap(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]));
    details.replaceChildren(el('h2', {}, sel.name), list);
  }

  /** The rows of the panel: [term, text or element]. */
  function describe(topologyIndex, sel) {
    if (sel.kind === 'topic' || sel.kind === 'store') {
      const uses = (sel.kind === 'topic' ? topologyIndex.topics : topologyIndex.stores).get(sel.name);
      return uses ? Object.entries(uses).map(([role, names]) => [role, links(sel.group, names)]) : null;
    }
    const found = topologyIndex.nodes.get(sel.name);
    if (!found) {
      return null;
    }
    const { node, block } = found;
    const rows = [['Sub-topology', block]];
    if (node.type === 'source') rows.push(['Topics', names(node.topics, 'topic', sel.group)]);
    if (node.type === 'sink') rows.push(['Topic', node.topic === null ? '(chosen per record)' : names([node.topic], 'topic', sel.group)]);
    if (node.type === 'processor') rows.push(['Stores', names(node.stores, 'store', sel.group)]);
    rows.push(['Predecessors', links(sel.group, node.predecessors)]);
    rows.push(['Successors', links(sel.group, node.successors)]);
    return rows;
  }

  /** Names of nodes of the group's topology, each selecting its node when clicked. */
  function links(group, nodeNames) {
    const index = groups.get(group).index;
    return names(nodeNames, (name) => (index.nodes.get(name) || { node: { type: 'processor' } }).node.type, group);
  }

  /** A list of names whose items select `kind` (a kind, or a function of the name). */
  function names(list, kind, group) {
    if (!list || list.length === 0) {
      return '(none)';
    }
    return el('ul', {}, ...list.map((name) => {
      const button = el('button', { type: 'button', class: 'link' }, name);
      button.dataset.kind = typeof kind === 'function' ? kind(name) : kind;
      button.dataset.name = name;
      button.dataset.group = group;
      return el('li', {}, button);
    }));
  }

  function nodeTarget(event) {
    const g = event.target.closest && event.target.closest('.drawing g.node');
    const section = g && g.closest('section.group');
    return g && section ? { group: section.dataset.group, kind: g.dataset.kind, name: g.dataset.name } : null;
  }

  document.addEventListener('click', (event) => {
    const target = nodeTarget(event);
    if (target) {
      select(target);
      return;
    }
    const zoomButton = event.target.closest && event.target.closest('.toolbar button');
    if (zoomButton) {
      const section = zoomButton.closest('section.group');
      const entry = section && groups.get(section.dataset.group);
      if (entry) {
        zoom(entry, zoomButton.dataset.zoom);
      }
      return;
    }
    const link = event.target.closest && event.target.closest('#details button.link');
    if (link) {
      select({ group: link.dataset.group, kind: link.dataset.kind, name: link.dataset.name });
      const element = nodeElement(selection);
      if (element) {
        element.scrollIntoView({ block: 'center', inline: 'center' });
        element.focus({ preventScroll: true });
      }
    }
  });

  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' && event.key !== ' ') {
      return;
    }
    const target = nodeTarget(event);
    if (target) {
      event.preventDefault();
      select(target);
    }
  });

  // Reopening a collapsed group reads its topology at once rather than at the next round.
  groupsMain.addEventListener('toggle', (event) => {
    const section = event.target.closest('section.group');
    const entry = section && groups.get(section.dataset.group);
    if (entry && event.target.open) {
      refreshTopology(entry);
    }
  }, true);

  poll();
})();
