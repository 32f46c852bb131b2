/**
 * One value of the outcome, as text for people: dates for the language, Yes/No, units, coded values
 * translated with the code kept, byte strings described (never dumped), nested data as nested lists.
 * Everything reaches the DOM as React text nodes: nothing from the backend is ever markup.
 */
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { formatDateTime, formatFullDate, formatNumber, formatSize } from './format.js';
import type { Cell, PrivilegeRow } from './present.js';

export function CellView(props: { cell: Cell }): ReactNode {
  const { t, i18n } = useTranslation('outcome');
  const language = i18n.language;
  const { cell } = props;
  switch (cell.kind) {
    case 'text':
      return <span className="outcome-text">{cell.text}</span>;
    case 'date':
      return <time dateTime={cell.iso}>{formatFullDate(cell.iso, language)}</time>;
    case 'datetime':
      return <time dateTime={cell.iso}>{formatDateTime(cell.iso, language)}</time>;
    case 'boolean':
      return <>{t(cell.value ? 'value.yes' : 'value.no')}</>;
    case 'number': {
      const value = formatNumber(cell.value, language);
      return <>{cell.unit === undefined ? value : t(`value.unit.${cell.unit}`, { value })}</>;
    }
    case 'year':
      // A year is a name, not a quantity: no digit grouping ("1990", not "1,990" or "1 990").
      return <>{String(cell.value)}</>;
    case 'code':
      return (
        <>
          {t(cell.key)} <span className="outcome-code">({cell.code})</span>
        </>
      );
    case 'word':
      return <>{t(cell.key)}</>;
    case 'bytes': {
      const size = formatSize(cell.length, language);
      return (
        <>{cell.image === undefined ? t('value.binary', { size }) : t('value.image', { format: t(`value.format.${cell.image}`), size })}</>
      );
    }
    case 'empty':
      return <>{t('value.empty')}</>;
    case 'tooDeep':
      return <span className="outcome-muted">{t('value.tooDeep')}</span>;
    case 'withheld':
      return <>{t('age.unknown')}</>;
    case 'list':
      return (
        <ul className="outcome-list">
          {cell.items.map((item, index) => (
            <li key={index}>
              <CellView cell={item} />
            </li>
          ))}
          {cell.omitted > 0 ? <li className="outcome-muted">{t('value.moreItems', { count: cell.omitted })}</li> : null}
        </ul>
      );
    case 'record':
      return (
        <dl className="outcome-record">
          {cell.fields.map((field, index) => (
            <div key={index} className="outcome-record-field">
              <dt>{field.key}</dt>
              <dd>
                <CellView cell={field.value} />
              </dd>
            </div>
          ))}
          {cell.omitted > 0 ? <div className="outcome-muted">{t('value.moreItems', { count: cell.omitted })}</div> : null}
        </dl>
      );
    case 'privileges':
      return <PrivilegesTable rows={cell.rows} omitted={cell.omitted} />;
  }
}

function PrivilegesTable(props: { rows: readonly PrivilegeRow[]; omitted: number }): ReactNode {
  const { t } = useTranslation('outcome');
  return (
    <table className="outcome-privileges">
      <thead>
        <tr>
          <th scope="col">{t('privileges.category')}</th>
          <th scope="col">{t('privileges.issued')}</th>
          <th scope="col">{t('privileges.expires')}</th>
          <th scope="col">{t('privileges.codes')}</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row, index) => (
          <tr key={index}>
            <th scope="row">
              <CellView cell={row.category} />
            </th>
            <td>
              <CellView cell={row.issued} />
            </td>
            <td>
              <CellView cell={row.expires} />
            </td>
            <td>{row.codes.length === 0 ? t('value.empty') : row.codes.join(', ')}</td>
          </tr>
        ))}
        {props.omitted > 0 ? (
          <tr>
            <td colSpan={4} className="outcome-muted">
              {t('value.moreItems', { count: props.omitted })}
            </td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}
