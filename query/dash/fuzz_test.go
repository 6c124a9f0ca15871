package dash

import (
	"errors"
	"testing"
)

// FuzzParams: whatever the parameter values, a call is either refused with
// a *ParamError or bound, and the SQL text sent is the same as with the
// example values: no value ever becomes part of the SQL.
func FuzzParams(f *testing.F) {
	for _, s := range []string{"", "p", "' OR 1=1 --", "{db}", "?", "2026-09-30", "48h", "10", "\x00", "{pipeline}"} {
		f.Add(s, s, s)
	}
	f.Fuzz(func(t *testing.T, str, date, num string) {
		for i := range definitions {
			d := &definitions[i]
			base, err := d.values(exampleParams(d.Query))
			if err != nil {
				t.Fatal(err)
			}
			want, wantArgs := d.bind("db", base)
			p := exampleParams(d.Query)
			for _, x := range d.Params {
				switch x.Type {
				case ParamString:
					p[x.Name] = str
				case ParamDate:
					p[x.Name] = date
				case ParamInt, ParamDuration:
					p[x.Name] = num
				}
			}
			vals, err := d.values(p)
			if err != nil {
				var pe *ParamError
				if !errors.As(err, &pe) || pe.Param == "" || pe.Reason == "" {
					t.Fatalf("%s: %v is not a *ParamError naming the parameter and the reason", d.Name, err)
				}
				continue
			}
			got, args := d.bind("db", vals)
			if got != want || len(args) != len(wantArgs) {
				t.Fatalf("%s: the SQL text depends on the values %q %q %q", d.Name, str, date, num)
			}
		}
	})
}
