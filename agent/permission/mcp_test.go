package permission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MCP tools are named by rules as tools, servers (mcp__db) or globs
// (mcp__db__*); ask and read-only modes treat them as changing things
// unless the call says the tool is read-only (for an MCP tool: a trusted
// hint, the workspace decides).
func TestDecideMCPTools(t *testing.T) {
	p := Policy{
		Mode:  Ask,
		Hosts: map[string]Mode{"prod": ReadOnly},
		Allow: rules(t, "mcp__db__query", "mcp__docs"),
		Ask:   rules(t, "mcp__web__*"),
		Deny:  rules(t, "mcp__db__drop"),
	}
	for _, tc := range []struct {
		call Call
		want Verdict
	}{
		{Call{Tool: "mcp__db__query"}, Run},                        // allowed by name
		{Call{Tool: "mcp__docs__search"}, Run},                     // by its server
		{Call{Tool: "mcp__docsx__search"}, AskPerson},              // another server
		{Call{Tool: "mcp__db__drop"}, Refuse},                      // denied
		{Call{Tool: "mcp__db__drop", ReadOnly: true}, Refuse},      // deny beats the hint
		{Call{Tool: "mcp__db__insert"}, AskPerson},                 // ask mode: changes things
		{Call{Tool: "mcp__db__list", ReadOnly: true}, Run},         // trusted read-only hint
		{Call{Tool: "mcp__web__fetch", ReadOnly: true}, AskPerson}, // an ask rule asks anyway
		{Call{Host: "prod", Tool: "mcp__db__insert"}, Refuse},      // read-only host
		{Call{Host: "prod", Tool: "mcp__db__query"}, Refuse},       // no rule loosens read-only
		{Call{Host: "prod", Tool: "mcp__db__list", ReadOnly: true}, Run},
	} {
		d := p.Decide(tc.call)
		assert.Equal(t, tc.want, d.Verdict, "%+v: %s", tc.call, d.Reason)
	}
	assert.Equal(t, "the session asks before mcp__db__insert", p.Decide(Call{Tool: "mcp__db__insert"}).Reason)
	assert.Equal(t, Run, Policy{}.Decide(Call{Tool: "mcp__db__insert"}).Verdict, "auto runs MCP tools")

	_, err := ParseRule("mcp__db__query(select *)")
	assert.ErrorContains(t, err, "takes no pattern")
	_, err = ParseRule("mcp__db__[")
	assert.Error(t, err)
}

// "Always for this session" on an MCP tool allows that tool, and says so
// without an empty host.
func TestGateSessionRuleForMCPTool(t *testing.T) {
	g := NewGate(Policy{Mode: Ask})
	asked := 0
	g.SetAsker(func(context.Context, Request) (Answer, error) {
		asked++
		return Answer{Decision: Session}, nil
	})
	require.NoError(t, g.Check(t.Context(), Call{Tool: "mcp__db__insert"}, nil))
	require.NoError(t, g.Check(t.Context(), Call{Tool: "mcp__db__insert"}, nil))
	assert.Equal(t, 1, asked)
	assert.Equal(t, "mcp__db__insert", g.Policy().Allow[0].Text)
	assert.False(t, g.Quiet("", "mcp__db__list", false), "ask mode asks about an MCP tool not read-only")
}
