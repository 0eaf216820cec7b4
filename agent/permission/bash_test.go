package permission

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A line splits into the commands it runs, wherever they hide.
func TestCommands(t *testing.T) {
	for _, tc := range []struct {
		line     string
		want     []string
		complete bool
	}{
		{"git status", []string{"git status"}, true},
		{"  git   status  ", []string{"git status"}, true},
		{"git status && rm -rf /", []string{"git status", "rm -rf /"}, true},
		{"a; b || c | d & e |& f", []string{"a", "b", "c", "d", "e", "f"}, true},
		{"a\nb", []string{"a", "b"}, true},
		{"echo $(rm -rf /)", []string{"rm -rf /", "echo $(rm -rf /)"}, true},
		{"echo \"x $(id) y\"", []string{"id", "echo x $(id) y"}, true},
		{"echo `whoami`", []string{"whoami", "echo `whoami`"}, true},
		{"(cd /tmp && rm x)", []string{"cd /tmp", "rm x"}, true},
		{"{ a; b; }", []string{"a", "b"}, true},
		{"diff <(ls a) <(ls b)", []string{"ls a", "ls b", "diff"}, true},
		{"git commit -m 'fix: a && b'", []string{"git commit -m fix: a && b"}, true},
		{`git commit -m "say \"hi\""`, []string{`git commit -m say "hi"`}, true},
		{`echo a\;b`, []string{"echo a;b"}, true},
		{"if grep -q x f; then rm f; fi", []string{"grep -q x f", "rm f"}, true},
		{"while true; do sleep 1; done", []string{"true", "sleep 1"}, true},
		{"! grep x f", []string{"grep x f"}, true},
		{"echo $((1+2))", []string{"echo $((1+2))"}, true},
		{"sh -c 'rm -rf /'", []string{"sh -c rm -rf /", "rm -rf /"}, true},
		{"bash -c \"a && b\"", []string{"bash -c a && b", "a", "b"}, true},
		{"ls # && rm -rf /", []string{"ls"}, true},
		{"eval 'rm -rf /'", []string{"eval rm -rf /", "rm -rf /"}, true},
		{"$'rm' -rf /", []string{"rm -rf /"}, true},
		{"$\"rm\" -rf /", []string{"rm -rf /"}, true},
		{"r\\m -rf /", []string{"rm -rf /"}, true},
		{"for f in *; do rm $f; done", []string{"rm $f"}, false},
		{"cat <<EOF\nrm -rf /\nEOF", []string{"cat EOF", "rm -rf /", "EOF"}, false},
		{"f() { rm -rf /; }; f", []string{"rm -rf /", "f"}, false},
		{"echo 'unclosed", []string{"echo unclosed"}, false},
		{"echo $(ls", []string{"ls", "echo $(ls"}, false},
	} {
		cmds, complete := Commands(tc.line)
		var got []string
		for _, c := range cmds {
			got = append(got, c.Text)
		}
		assert.Equal(t, tc.want, got, "%q", tc.line)
		assert.Equal(t, tc.complete, complete, "%q complete", tc.line)
	}
}

// A command that writes its output to a file says so; one that writes to
// /dev/null or a descriptor does not.
func TestCommandsWrites(t *testing.T) {
	for _, tc := range []struct {
		line   string
		writes bool
	}{
		{"git status > out", true},
		{"git status >> ~/.bashrc", true},
		{"git status >| out", true},
		{"git status &> out", true},
		{"git status 2> err", true},
		{"git status > /dev/null", false},
		{"git status 2>/dev/null", false},
		{"git status 2>&1", false},
		{"git status >&2", false},
		{"git status >&out", true},
		{"git status < in", false},
		{"git status", false},
	} {
		cmds, _ := Commands(tc.line)
		if assert.Len(t, cmds, 1, tc.line) {
			assert.Equal(t, tc.writes, cmds[0].Writes, tc.line)
			assert.Equal(t, "git status", cmds[0].Text, tc.line)
		}
	}
}

// Any line splits, in time, without a panic; a stray ")" leaves the line
// incomplete but what follows it is read.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{"git status && rm -rf /", "echo $(a `b` $((1)) <(c))", "a ) b", "'", "\"$(", "f() { x; }", "cat <<EOF\nx\nEOF", "$'\\'", "a >&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		Commands(line)
	})
}

func TestStrayParenthesis(t *testing.T) {
	cmds, complete := Commands("ls ) ; rm -rf /")
	assert.False(t, complete)
	var got []string
	for _, c := range cmds {
		got = append(got, c.Text)
	}
	assert.Equal(t, []string{"ls", "rm -rf /"}, got)
}
