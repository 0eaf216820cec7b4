package hostproto

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The statuses the client accepts for each request, and for a job in a
// frame ("X"), are those the server sends; anything else is a protocol
// error.
func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		fn, status string
		ok         bool
	}{
		{"call", "0", true},
		{"call", "1", true},
		{"call", "!PROTOCOL unknown request", false},
		{"call", "OK", false},
		{"call", "", false},
		{"read_head", "0", true},
		{"read_head", "E EIO read failed", true},
		{"read_head", "!PROTOCOL malformed request", false},
		{"open_file", "1", false},
		{"X", "0", true},
		{"X", "137 killed", true},
		{"X", "0 saved", true},
		{"X", "141 capped unsaved", true},
		{"X", "!NOJOB", true},
		{"X", "!DETACHED", true},
		{"X", "!ATTACH", true},
		{"X", "!EIO the job ended without a status (its waiter was killed)", true},
		{"X", "!EIO", false},
		{"X", "!GONE 0", true},
		{"X", "!ENOENT", true},
		{"X", "!NOJOB now", false},
		{"X", "!PROTOCOL unknown request", false},
		{"X", "0 frobnicated", false},
		{"X", "OK", false},
		{"X", "", false},
		{"attach_jobs", "OK", true},
		{"attach_jobs", "!DETACHED", true},
		{"attach_jobs", "!NOJOB", false},
		{"attach_jobs", "0", false},
		{"run_jobs", "!EIO cannot create x", true},
		{"run_jobs", "OK", true},
		{"run_jobs", "0", false},
		{"run_jobs", "!PROTOCOL malformed request", false},
		{"something_new", "!PROTOCOL unknown request", false},
		{"something_new", "anything", true},
	} {
		var err error
		if tc.fn == "X" {
			// A job's status, in the frame "X ID STATUS".
			_, err = FrameStatus(tc.status)
		} else {
			_, err = Request{Name: tc.fn}.Answer(tc.status)
		}
		if tc.ok {
			assert.NoError(t, err, "%s answering %q", tc.fn, tc.status)
		} else {
			assert.ErrorIs(t, err, ErrProtocol, "%s answering %q", tc.fn, tc.status)
		}
	}
}

// A status is parsed once: its kind and its words.
func TestStatusParsed(t *testing.T) {
	for _, tc := range []struct {
		req    Request
		status string
		want   Status
	}{
		{RunJob(Job{ID: "ab"}, 0, "", nil), "OK", Status{Kind: OK, Text: "OK"}},
		{RunJob(Job{ID: "ab"}, 0, "", nil), "!EIO no room", Status{Kind: EIO, Text: "!EIO no room", Arg: "no room"}},
		{AttachJobs(0), "!DETACHED", Status{Kind: Detached, Text: "!DETACHED"}},
		{RunJobs(0, "", nil), "OK", Status{Kind: OK, Text: "OK"}},
		{StatPath("/"), "2", Status{Kind: Exited, Text: "2", Code: 2}},
		{OpenFile("/f", 3), "E EIO read failed", Status{Kind: Failed, Text: "E EIO read failed", Arg: "E EIO read failed"}},
	} {
		got, err := tc.req.Answer(tc.status)
		require.NoError(t, err, tc.status)
		assert.Equal(t, tc.want, got, tc.status)
	}
	for _, tc := range []struct {
		status string
		want   Status
	}{
		{"137 killed saved", Status{Kind: Ended, Text: "137 killed saved", Job: JobStatus{Code: 137, Stopped: "killed", Saved: true}}},
		{"!GONE 0 capped", Status{Kind: Gone, Text: "!GONE 0 capped", Arg: "0 capped"}},
		{"!EIO no room", Status{Kind: EIO, Text: "!EIO no room", Arg: "no room"}},
		{"!ENOTDIR", Status{Kind: NotDir, Text: "!ENOTDIR"}},
		{"!ATTACH", Status{Kind: Attach, Text: "!ATTACH"}},
		{"!DETACHED", Status{Kind: Detached, Text: "!DETACHED"}},
	} {
		got, err := FrameStatus(tc.status)
		require.NoError(t, err, tc.status)
		assert.Equal(t, tc.want, got, tc.status)
	}
	// A batch of one ends "OK" once its job has its frame: a job's status
	// there is a protocol error.
	_, err := RunJob(Job{ID: "ab"}, 0, "", nil).Answer("0")
	assert.ErrorIs(t, err, ErrProtocol)
}

// The builders put the words where the server reads them.
func TestBuilders(t *testing.T) {
	j := Job{ID: "ab", Script: "echo hi", Dir: "/d", Save: "/s", SaveBytes: "10", SaveLines: "2", Label: "echo"}
	for _, tc := range []struct {
		got  Request
		want Request
	}{
		{RunJob(j, 60e9, "100", []string{"c1", "c2"}), Request{Name: "run_jobs", Args: []string{"60", "100", "c1 c2", "ab", "echo hi", "/d", "/s", "10", "2", "echo"}}},
		{RunJobs(60e9, "100", nil), Request{Name: "run_jobs", Args: []string{"60", "100", ""}}},
		{AddJob(j), Request{Name: "add_job", Args: []string{"ab", "echo hi", "/d", "/s", "10", "2", "echo"}}},
		{AttachJobs(60e9, Follow{ID: "ab", Offset: 3, Save: "/s"}), Request{Name: "attach_jobs", Args: []string{"60", "ab", "3", "/s", "", ""}}},
		{OpenFile("/f", 0), Request{Name: "open_file", Args: []string{"/f"}}},
		{OpenFile("/f", 9), Request{Name: "open_file", Args: []string{"/f", "9"}}},
		{ReceiveTemp("/t", "12", []byte("abc")), Request{Name: "call", Args: []string{"receive_temp", "/t", "12", "3"}, Data: []byte("abc")}},
		{SettleWrite("/t", "d", "s1", "s2"), Request{Name: "call", Args: []string{"settle_write", "/t", "d", "s1", "s2"}}},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
	assert.Equal(t, "serve M 0.3 yes 0a1b 'c d' 1", Serve("M", "0.3", true, "0a1b", "c d", "1"))
	assert.Equal(t, Control("a ab 3 10 2 /s with space\n"), Add(Follow{ID: "ab", Offset: 3, Save: "/s with space", SaveBytes: "10", SaveLines: "2"}))
}
