package serve

import (
	"context"
	"errors"
	"net/http"

	"github.com/handoff-dev/handoff/query/dash"
)

// Dashboards runs the named dashboard queries; *dash.Runner implements it.
type Dashboards interface {
	Run(ctx context.Context, name string, params map[string]string) (dash.Result, error)
}

// DashboardParam is one parameter of a dashboard query, as the API lists it.
type DashboardParam struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Default  string `json:"default,omitempty"`
	Doc      string `json:"doc"`
}

// Dashboard is one dashboard query, as the API lists it.
type Dashboard struct {
	Name   string           `json:"name"`
	Title  string           `json:"title"`
	Doc    string           `json:"doc"`
	Params []DashboardParam `json:"params"`
	URL    string           `json:"url"`
}

// DashboardResult is a dashboard query's output.
type DashboardResult struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Types   []string `json:"types"`
	Rows    [][]any  `json:"rows"`
}

func (s *Server) apiDashboards(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r.URL.RawQuery); err != nil {
		return err
	}
	out := []Dashboard{}
	if s.dash != nil {
		for _, q := range dash.Queries() {
			d := Dashboard{Name: q.Name, Title: q.Title, Doc: q.Doc, Params: []DashboardParam{}, URL: "/api/v1/dashboards/" + pathEscape(q.Name)}
			for _, p := range q.Params {
				d.Params = append(d.Params, DashboardParam{Name: p.Name, Type: string(p.Type), Required: p.Required, Default: p.Default, Doc: p.Doc})
			}
			out = append(out, d)
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"dashboards": out})
}

func (s *Server) apiDashboard(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if s.dash == nil {
		return &httpError{status: http.StatusNotFound, code: "unknown_dashboard", msg: "this server runs no dashboard queries"}
	}
	known := false
	for _, q := range dash.Queries() {
		known = known || q.Name == name
	}
	if !known {
		return &httpError{status: http.StatusNotFound, code: "unknown_dashboard", msg: "no dashboard query " + clip(name) + "; GET /api/v1/dashboards lists them"}
	}
	// Any parameter name goes through: dash.Runner refuses the ones its
	// query does not take, naming them.
	p, err := parseParams(r.URL.RawQuery, anyName)
	if err != nil {
		return err
	}
	vals := make(map[string]string, len(p.v))
	for k, v := range p.v {
		vals[k] = v[0]
	}
	qctx, cancel := s.rd.ctx(r.Context())
	defer cancel()
	res, err := s.dash.Run(qctx, name, vals)
	if err != nil {
		if dashParamError(err) != nil || isUnknownQuery(err) {
			return err
		}
		return s.rd.wrap(r.Context(), qctx, "dashboard "+name, err)
	}
	out := DashboardResult{Name: name, Columns: res.Columns, Types: res.Types, Rows: res.Rows}
	if out.Rows == nil {
		out.Rows = [][]any{}
	}
	return writeJSON(w, http.StatusOK, out)
}

// dashParamError returns the parameter error of a dashboard query, or nil.
func dashParamError(err error) *paramError {
	var pe *dash.ParamError
	if errors.As(err, &pe) {
		return &paramError{param: pe.Param, reason: pe.Reason}
	}
	return nil
}

// isUnknownQuery reports whether err names an unknown dashboard query.
func isUnknownQuery(err error) bool { return errors.Is(err, dash.ErrUnknownQuery) }
