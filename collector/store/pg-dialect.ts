import { PostgresDialect, sql } from 'kysely'
import type {
  DatabaseIntrospector,
  DatabaseMetadataOptions,
  Kysely,
  SchemaMetadata,
  TableMetadata,
} from 'kysely'

/**
 * PostgreSQL as kysely's own dialect, but introspection sees the current schema only.
 *
 * kysely's Migrator asks the introspector whether its tables exist, and the stock PostgreSQL introspector
 * lists every table of every schema in the database, calling `pg_get_serial_sequence('schema.table', …)`
 * on each: when another client drops a schema or table while that query runs (other tailguard stores on
 * the same database, tests, a DBA), the query fails with "relation … does not exist" and the migration with
 * it. Listing `information_schema` rows of `current_schema()` has no such race and stays fast on a database
 * with thousands of tables.
 *
 * @example
 * ```ts
 * const db = new Kysely<DB>({ dialect: new CurrentSchemaPostgresDialect({ pool }) })
 * ```
 */
export class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db, super.createIntrospector(db))
  }
}

class CurrentSchemaIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>
  readonly #stock: DatabaseIntrospector

  constructor(db: Kysely<unknown>, stock: DatabaseIntrospector) {
    this.#db = db
    this.#stock = stock
  }

  getSchemas(): Promise<SchemaMetadata[]> {
    return this.#stock.getSchemas()
  }

  async getTables(options?: DatabaseMetadataOptions): Promise<TableMetadata[]> {
    const rows = (
      await sql<{
        schema: string
        table: string
        kind: string
        column: string | null
        type: string | null
        nullable: string | null
        dflt: string | null
      }>`select t.table_schema as schema, t.table_name as table, t.table_type as kind,
            c.column_name as column, c.udt_name as type, c.is_nullable as nullable, c.column_default as dflt
          from information_schema.tables t
          left join information_schema.columns c
            on c.table_schema = t.table_schema and c.table_name = t.table_name
          where t.table_schema = current_schema()
          order by t.table_name, c.ordinal_position`.execute(this.#db)
    ).rows
    const tables = new Map<string, TableMetadata & { columns: TableMetadata['columns'][number][] }>()
    for (const r of rows) {
      let t = tables.get(r.table)
      if (!t)
        tables.set(r.table, (t = { name: r.table, schema: r.schema, isView: r.kind === 'VIEW', columns: [] }))
      if (r.column === null) continue
      t.columns.push({
        name: r.column,
        dataType: r.type ?? '',
        dataTypeSchema: 'pg_catalog',
        isNullable: r.nullable === 'YES',
        isAutoIncrementing: r.dflt?.startsWith('nextval(') ?? false,
        hasDefaultValue: r.dflt !== null,
      })
    }
    const all = [...tables.values()]
    // kysely's default migration tables are left out unless asked for, as the stock introspector does.
    return options?.withInternalKyselyTables
      ? all
      : all.filter((t) => t.name !== 'kysely_migration' && t.name !== 'kysely_migration_lock')
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<{ tables: TableMetadata[] }> {
    return { tables: await this.getTables(options) }
  }
}
