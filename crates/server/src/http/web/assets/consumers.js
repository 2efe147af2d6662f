// kcoord's web page, the consumer groups: polls /api/v1/consumer-groups and each group's
// description, and shows its members with what each is assigned, and every partition it
// committed with its log end offset and lag (the largest lags first).
//
// Data from the server is only ever put into the page as text (textContent), never as HTML.
'use strict';

(() => {
  const POLL_MS = 3000;
  const container = document.getElementById('consumer-groups');
  const list = container.querySelector('.groups');
  const empty = container.querySelector('.empty');

  const { el, getJson } = window.kcoordPage;

  const table = (headings, rows) => el('table', {},
    el('thead', {}, el('tr', {}, ...headings.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, ...rows));

  function assignmentText(assignment) {
    const topics = Object.entries(assignment);
    return topics.length === 0 ? '(none)' : topics.map(([t, ps]) => `${t} [${ps.join(', ')}]`).join('; ');
  }

  function render(group) {
    const members = group.members.map((m) => el('tr', {},
      el('td', {}, m.memberId), el('td', {}, m.groupInstanceId ?? '–'),
      el('td', {}, `${m.clientId} ${m.clientHost}`), el('td', { class: 'assignment' }, assignmentText(m.assignment))));
    const partitions = group.offsets.slice().sort((a, b) => (b.lag ?? -1) - (a.lag ?? -1)).map((o) => el('tr', {},
      el('td', {}, `${o.topic}-${o.partition}`), el('td', {}, String(o.committedOffset)),
      el('td', {}, o.logEndOffset === null ? '–' : String(o.logEndOffset)),
      el('td', { class: 'lag' }, o.lag === null ? '–' : String(o.lag))));
    const section = el('section', { class: 'consumer-group' },
      el('h3', {}, group.groupId, ' ', el('span', { class: `state ${group.groupState}` }, group.groupState)),
      el('p', { class: 'meta' }, `${group.groupType} group · assignor ${group.partitionAssignor || '–'} · ` +
        `${group.members.length} member${group.members.length === 1 ? '' : 's'} · total lag ${group.totalLag}`),
      table(['Member', 'Instance', 'Client', 'Assigned'], members),
      table(['Partition', 'Committed', 'Log end', 'Lag'], partitions));
    section.dataset.group = group.groupId;
    return section;
  }

  async function poll() {
    try {
      const listed = await getJson('api/v1/consumer-groups');
      const described = [];
      for (const g of listed.groups) {
        try {
          described.push(render(await getJson(`api/v1/consumer-groups/${encodeURIComponent(g.groupId)}`)));
        } catch (e) {
          described.push(el('section', { class: 'consumer-group' }, el('h3', {}, g.groupId), el('p', { class: 'meta' }, e.message)));
        }
      }
      list.replaceChildren(...described);
      empty.hidden = listed.groups.length > 0;
    } catch (e) {
      list.replaceChildren(el('p', { class: 'meta' }, `Cannot read the consumer groups: ${e.message}`));
    } finally {
      setTimeout(poll, POLL_MS);
    }
  }

  poll();
})();
