package db

import (
	"context"
	"fmt"
	"slices"
)

// OrgTables returns the tables that hold organizations' rows, read from
// the database's catalog: every table with an org_id column, each before
// the tables its foreign keys reference, so that deleting an org's rows in
// this order never breaks a key. A table added later with an org_id
// column is in it without any change here. The orgs table itself, whose
// key is id, is not.
//
// Returns only the database's errors.
func (d *DB) OrgTables(ctx context.Context, q Reader) ([]string, error) {
	keysSQL := `SELECT m.name, f."table" FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`
	if d.Engine == Postgres {
		keysSQL = `SELECT c.relname, p.relname FROM pg_constraint k
			JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
			WHERE k.contype = 'f' AND k.connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`
	}
	tables, err := d.tablesWith(ctx, q, "org_id")
	if err != nil {
		return nil, err
	}
	// referenced[t] are the tables of the list that t's keys reference.
	referenced := map[string][]string{}
	if err := Each(ctx, q, func(r *Rows) error {
		var from, to string
		if err := r.Scan(&from, &to); err != nil {
			return err
		}
		if from != to && slices.Contains(tables, to) {
			referenced[from] = append(referenced[from], to)
		}
		return nil
	}, keysSQL); err != nil {
		return nil, fmt.Errorf("read the catalog's foreign keys: %w", err)
	}
	// A table comes before every table it references: repeatedly take the
	// tables no table left references.
	var order []string
	left := slices.Clone(tables)
	for len(left) > 0 {
		var next, rest []string
		for _, t := range left {
			wanted := false
			for _, u := range left {
				if slices.Contains(referenced[u], t) {
					wanted = true
					break
				}
			}
			if wanted {
				rest = append(rest, t)
			} else {
				next = append(next, t)
			}
		}
		if len(next) == 0 {
			return nil, fmt.Errorf("the foreign keys between %v form a cycle", rest)
		}
		order, left = append(order, next...), rest
	}
	return order, nil
}

// PurgeOrg deletes every row of orgID in q, a transaction: from each of
// OrgTables in its order, then the org's row of orgs. A table without an
// org_id column that holds an org's rows through a foreign key (an OAuth
// grant's tokens) loses them by the key's ON DELETE CASCADE; SQLite's
// full-text tables follow their content tables by trigger. It returns how
// many rows it deleted from the tables it names.
//
// This is the one statement of ctalk that writes other packages' tables:
// built from the catalog, so that a table added later cannot be left
// behind (TestTableOwnership allows it by name).
//
// Returns only the database's errors.
func (d *DB) PurgeOrg(ctx context.Context, q Querier, orgID string) (int64, error) {
	tables, err := d.OrgTables(ctx, q)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range append(tables, "orgs") {
		col := "org_id"
		if t == "orgs" {
			col = "id"
		}
		res, err := q.Exec(ctx, "DELETE FROM "+quoteIdent(t)+" WHERE "+col+" = $1", orgID)
		if err != nil {
			return n, fmt.Errorf("delete the org's rows of %s: %w", t, err)
		}
		rows, err := res.RowsAffected()
		if err != nil {
			return n, err
		}
		n += rows
	}
	return n, nil
}

// quoteIdent quotes a name read from the catalog as an SQL identifier, on
// either engine.
func quoteIdent(name string) string {
	out := []byte{'"'}
	for i := range len(name) {
		if name[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, name[i])
	}
	return string(append(out, '"'))
}

// PurgeUser deletes, in q, a transaction, every row of the member userID
// of orgID from each table with both an org_id and a user_id column, read
// from the catalog as PurgeOrg does, except the tables of keep: their
// credentials, settings, memberships, notifications and the like, in
// tables written now or later. Rows that name the member otherwise (the
// questions they asked, the messages they posted) are not touched. It
// returns how many rows it deleted.
//
// Returns only the database's errors.
func (d *DB) PurgeUser(ctx context.Context, q Querier, orgID, userID string, keep ...string) (int64, error) {
	tables, err := d.OrgTables(ctx, q)
	if err != nil {
		return 0, err
	}
	withUser, err := d.tablesWith(ctx, q, "user_id")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tables {
		if !slices.Contains(withUser, t) || slices.Contains(keep, t) {
			continue
		}
		res, err := q.Exec(ctx, "DELETE FROM "+quoteIdent(t)+" WHERE org_id = $1 AND user_id = $2", orgID, userID)
		if err != nil {
			return n, fmt.Errorf("delete the member's rows of %s: %w", t, err)
		}
		rows, err := res.RowsAffected()
		if err != nil {
			return n, err
		}
		n += rows
	}
	return n, nil
}

// tablesWith returns the tables, not views, that have the column, read
// from the catalog, by name.
func (d *DB) tablesWith(ctx context.Context, q Reader, column string) ([]string, error) {
	query := `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND p.name = $1 ORDER BY m.name`
	if d.Engine == Postgres {
		query = `SELECT c.table_name FROM information_schema.columns c
			JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
			WHERE c.table_schema = current_schema() AND c.column_name = $1 AND t.table_type = 'BASE TABLE'
			ORDER BY c.table_name`
	}
	var tables []string
	err := Each(ctx, q, func(r *Rows) error {
		var t string
		err := r.Scan(&t)
		tables = append(tables, t)
		return err
	}, query, column)
	if err != nil {
		return nil, fmt.Errorf("read the catalog's tables with %s: %w", column, err)
	}
	return tables, nil
}
