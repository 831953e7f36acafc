# Sourced by the job that tests/vm/run writes for each guest, run as root
# (pid 1) in the guest once tests/vm/init has switched to the host's root
# under a tmpfs overlay.  Everything the host reads back goes to $results:
#   progress           "start NAME" and "end NAME STATUS" as programs run
#   NAME.tap           a test program's standard output (TAP, a line per
#   NAME.stderr          case as it finishes) and its standard error
#   status.txt/.json   `uffdguard status` and `uffdguard status --json`,
#   status.rc/.json.rc   with their exit codes
#   uname, cmdline     what ran
#   lsm                the security modules active in the guest
#   dmesg              what the kernel said
#   tmp-left           what the tests left in /tmp (if it was a fresh one)
# and a line per step to the console, which the host keeps as console.log.
# shellcheck shell=sh
results=/uffdguard-results

say() {
	echo "uffdguard-vm: $*" >/dev/console
}

# fresh_tmpfs DIR MODE PATH...: an empty tmpfs on DIR, unless one of the
# PATHs (the project, the build) lies under it and must stay visible.
fresh_tmpfs() {
	dir=$1 mode=$2
	shift 2
	for path; do
		case $path/ in "$dir"/*) return 1 ;; esac
	done
	mount -t tmpfs -o "mode=$mode" tmpfs "$dir"
}

# guest_setup PROJECT BUILD: a clean system for the tests; the host's /tmp
# and /run are not theirs.
guest_setup() {
	# What the tests leave in /tmp can be told only on a fresh one.
	fresh_tmpfs /tmp 1777 "$@" && : >"$results/tmp-left"
	fresh_tmpfs /run 0755 "$@"
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
	/bin/busybox ip link set lo up
	/bin/busybox hostname uffdguard-vm
	uname -a >"$results/uname"
	cat /proc/cmdline >"$results/cmdline"
	mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
	cat /sys/kernel/security/lsm >"$results/lsm" 2>/dev/null
	say "kernel $(uname -r), $(nproc) CPU(s)"
}

# guest_status UFFDGUARD: the text and JSON reports, each with its exit code.
guest_status() {
	say "uffdguard status"
	"$1" status >"$results/status.txt" 2>&1
	echo $? >"$results/status.rc"
	"$1" status --json >"$results/status.json" 2>"$results/status.json.stderr"
	echo $? >"$results/status.json.rc"
}

# guest_test NAME SECONDS DIR COMMAND...: run one test program in DIR,
# killed after SECONDS (the exit status is then 124, or 137 if it had to
# be killed hard).
guest_test() {
	name=$1 limit=$2 dir=$3
	shift 3
	say "start $name"
	echo "start $name" >>"$results/progress"
	(cd "$dir" && exec timeout -k 10 "$limit" "$@") >"$results/$name.tap" 2>"$results/$name.stderr"
	rc=$?
	echo "end $name $rc" >>"$results/progress"
	say "end $name $rc"
}

guest_finish() {
	dmesg >"$results/dmesg"
	[ -e "$results/tmp-left" ] && ls -A /tmp >"$results/tmp-left"
	echo "done" >>"$results/progress"
	say "done"
	sync
	# QEMU runs with -no-reboot: this ends it, with or without ACPI.
	/bin/busybox reboot -f
}
