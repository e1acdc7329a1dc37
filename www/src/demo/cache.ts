// The models kept in this origin's storage: what they cost and a way to get the space back.

import { cacheEstimate, deleteCachedModel, listCachedModels, type CachedModel } from 'tpsmeter/engine';
import { byId, el, fill } from '../common/dom';
import { mb } from '../common/format';

export class CacheView {
  private usage = byId('cache-usage');
  private list = byId('cache-list');
  private status = byId('cache-status');
  /** Called with the kept models after every refresh (the picker marks them). */
  onList: (models: CachedModel[]) => void = () => {};

  async refresh(): Promise<void> {
    let models: CachedModel[];
    let estimate: Awaited<ReturnType<typeof cacheEstimate>>;
    try {
      [models, estimate] = await Promise.all([listCachedModels(), cacheEstimate()]);
    } catch (e) {
      // Some private modes refuse storage altogether: the demo still runs, it re-downloads.
      fill(this.usage, `This browser’s storage cannot be read here (${e instanceof Error ? e.message : String(e)}), so models are downloaded each time.`);
      fill(this.list);
      this.onList([]);
      return;
    }
    this.renderUsage(estimate);
    this.renderList(models);
    this.onList(models);
  }

  private renderUsage(e: Awaited<ReturnType<typeof cacheEstimate>>): void {
    if (e.store === 'none') {
      fill(this.usage, 'This browser offers no storage to keep models in: each load downloads the file again.');
      return;
    }
    const where = e.store === 'opfs' ? 'the origin private file system' : 'Cache Storage';
    const total =
      e.usage !== undefined && e.quota !== undefined
        ? ` This site uses ${mb(e.usage)} MB of the ${mb(e.quota, 0)} MB the browser allows it.`
        : '';
    fill(this.usage, `Models kept: ${mb(e.models)} MB, in ${where}.${total}`);
  }

  private renderList(models: CachedModel[]): void {
    if (models.length === 0) {
      fill(this.list, el('p', { class: 'hint' }, 'No models are kept in this browser yet.'));
      return;
    }
    const rows = models.map((m) =>
      el(
        'tr',
        {},
        el('td', { class: 'name' }, el('span', { class: 'mono' }, m.name), m.modelName ? el('span', { class: 'sub' }, m.modelName) : ''),
        el('td', { class: 'num' }, mb(m.size)),
        el('td', { class: 'url' }, m.sourceUrl),
        el('td', {}, this.deleteButton(m)),
      ),
    );
    fill(
      this.list,
      el(
        'div',
        { class: 'table-wrap' },
        el(
          'table',
          { class: 'cache-table' },
          el('caption', {}, 'Kept models'),
          el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Name'), el('th', { scope: 'col', class: 'num' }, 'Size (MB)'), el('th', { scope: 'col' }, 'Source'), el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Actions')))),
          el('tbody', {}, ...rows),
        ),
      ),
    );
  }

  private deleteButton(m: CachedModel): HTMLButtonElement {
    const b = el('button', { type: 'button', 'aria-label': `Delete ${m.name}` }, 'Delete');
    b.addEventListener('click', () => void this.remove(m, b));
    return b;
  }

  private async remove(m: CachedModel, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    let said: string;
    try {
      await deleteCachedModel(m.name);
      said = `Deleted ${m.name} (${mb(m.size)} MB).`;
    } catch (e) {
      said = `Could not delete ${m.name}: ${e instanceof Error ? e.message : String(e)}`;
    }
    await this.refresh();
    this.status.textContent = said;
    // The button is gone with its row: keep keyboard focus in the section.
    const next = this.list.querySelector<HTMLButtonElement>('button');
    (next ?? byId('cache-h')).focus();
  }
}
