package schema

import "strings"

// UpgradeStatements is upgradeStatements for the tests, with the server's
// columns given as names by table ("name KIND" for a column with a
// default kind, e.g. "time MATERIALIZED").
func UpgradeStatements(db string, l Layout, have map[string][]string) ([]string, error) {
	sc := serverColumns{}
	for t, cols := range have {
		sc[t] = map[string]string{}
		for _, c := range cols {
			name, kind, _ := strings.Cut(c, " ")
			sc[t][name] = kind
		}
	}
	as, err := upgradeStatements(db, l, sc)
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.sql
	}
	return out, err
}
