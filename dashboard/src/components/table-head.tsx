/** A column of {@link TableHead}: its label, whether it holds numbers (right-aligned), and whether the label is for screen readers only. */
export interface Column {
  readonly label: string
  readonly num?: boolean
  readonly hidden?: boolean
}

/**
 * A table's header row: one `th scope="col"` per column; a plain string is a text column.
 *
 * @example <TableHead columns={['service', { label: 'p99', num: true }, { label: 'actions', hidden: true }]} />
 */
export function TableHead({ columns }: { columns: ReadonlyArray<string | Column | false> }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => {
          if (c === false) return null
          const col = typeof c === 'string' ? { label: c } : c
          return (
            <th key={col.label} scope="col" className={col.num ? 'num' : undefined}>
              {col.hidden ? <span className="visually-hidden">{col.label}</span> : col.label}
            </th>
          )
        })}
      </tr>
    </thead>
  )
}
