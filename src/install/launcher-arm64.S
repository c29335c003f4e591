# The aarch64 twin of launcher.S: what `drainguard install` writes as
# DIR/drainguard on linux/arm64. Same steps, same messages, same exit status:
# a static executable that needs no libc, no shell and no dynamic loader
# from the image, and execs the loader beside it in place:
#
#   DIR/lib/ld-linux-aarch64.so.1 --inhibit-cache --library-path DIR/lib
#       --argv0 DIR/drainguard DIR/lib/drainguard ARGS...
#
# As PID 1 (or a child subreaper) it stays, as the reaper of orphans, and
# runs drainguard as its only child, as launcher.S does (become_init).
#
# DIR is the directory of this file: from /proc/self/exe, or from argv[0]
# when /proc is not mounted and argv[0] names a path.
#
# Assembled by scripts/generate.ts (aarch64-linux-gnu-as, objcopy -O binary)
# into src/install/launcher-image.ts; the drift test checks they agree.

	.set	BASE, 0x400000
	.set	PATH_MAX, 4096
	.set	SLOT, PATH_MAX + 64		// DIR plus the longest suffix below
	.set	FRAME, PATH_MAX + 3*SLOT
	.set	AT_FDCWD, -100
	.set	SYS_ioctl, 29
	.set	SYS_readlinkat, 78
	.set	SYS_write, 64
	.set	SYS_exit_group, 94
	.set	SYS_kill, 129
	.set	SYS_rt_sigprocmask, 135
	.set	SYS_rt_sigtimedwait, 137
	.set	SYS_setpgid, 154
	.set	SYS_prctl, 167
	.set	SYS_getpid, 172
	.set	SYS_clone, 220
	.set	SYS_execve, 221
	.set	SYS_wait4, 260
	.set	EXIT_CANNOT_RUN, 127
	.set	PR_GET_CHILD_SUBREAPER, 37
	.set	SIG_SETMASK, 2
	.set	SIGCHLD, 17
	.set	WNOHANG, 1
	.set	TIOCSPGRP, 0x5410
	// The signals passed on to drainguard, a bit per signal number (launcher.S says which and why).
	.set	FORWARDED, 0xfffffffe & ~(1<<4 | 1<<7 | 1<<8 | 1<<9 | 1<<11 | 1<<13 | 1<<17 | 1<<19)

	.text
ehdr:						// Elf64_Ehdr
	.byte	0x7f, 'E', 'L', 'F', 2, 1, 1, 0	// 64-bit, little-endian, version 1, System V
	.quad	0
	.hword	2				// e_type: ET_EXEC
	.hword	0xb7				// e_machine: AArch64
	.word	1				// e_version
	.quad	BASE + _start - ehdr		// e_entry
	.quad	phdrs - ehdr			// e_phoff
	.quad	0				// e_shoff: no sections
	.word	0				// e_flags
	.hword	64				// e_ehsize
	.hword	56				// e_phentsize
	.hword	2				// e_phnum
	.hword	0, 0, 0				// e_shentsize, e_shnum, e_shstrndx
phdrs:						// Elf64_Phdr: the whole file, read and execute
	.word	1				// PT_LOAD
	.word	5				// PF_R | PF_X
	.quad	0				// p_offset
	.quad	BASE				// p_vaddr
	.quad	BASE				// p_paddr
	.quad	end - ehdr			// p_filesz
	.quad	end - ehdr			// p_memsz
	.quad	0x10000				// p_align: 64 KiB, the largest arm64 page size
						// a stack that is not executable
	.word	0x6474e551			// PT_GNU_STACK
	.word	6				// PF_R | PF_W
	.quad	0, 0, 0, 0, 0
	.quad	16

_start:
	ldr	x19, [sp]			// x19: argc
	add	x20, sp, #8			// x20: argv
	add	x21, x20, x19, lsl #3
	add	x21, x21, #8			// x21: envp
	mov	x9, #FRAME
	sub	sp, sp, x9
	mov	x22, sp				// x22: own path
	add	x24, x22, #PATH_MAX		// x24: DIR/lib/ld-linux-aarch64.so.1
	mov	x9, #SLOT
	add	x25, x24, x9			// x25: DIR/lib
	add	x26, x25, x9			// x26: DIR/lib/drainguard

	// Own path: the kernel's link, else argv[0] when it names a path.
	mov	x0, #AT_FDCWD
	adr	x1, proc_self_exe
	mov	x2, x22
	mov	x3, #(PATH_MAX - 1)
	mov	x8, #SYS_readlinkat
	svc	#0
	cmp	x0, #0
	b.gt	have_path
	ldr	x1, [x20]			// argv[0]; NULL when argc is 0
	cbz	x1, no_path
	mov	x0, #0
copy_argv0:
	ldrb	w2, [x1, x0]
	strb	w2, [x22, x0]
	cbz	w2, have_path
	add	x0, x0, #1
	cmp	x0, #(PATH_MAX - 1)
	b.lo	copy_argv0
	b	no_path
have_path:					// x0: length of the path
	cmp	x0, #(PATH_MAX - 1)		// a full buffer may hold a truncated path
	b.hs	no_path
	strb	wzr, [x22, x0]
	mov	x23, x0
find_slash:					// x23: index of the last '/', the length of DIR
	subs	x23, x23, #1
	b.mi	no_path
	ldrb	w2, [x22, x23]
	cmp	w2, #'/'
	b.ne	find_slash

	mov	x0, x24
	adr	x1, loader_suffix
	bl	join
	mov	x0, x25
	adr	x1, lib_suffix
	bl	join
	mov	x0, x26
	adr	x1, program_suffix
	bl	join

	// The loader's argv: 7 fixed entries, then ARGS (argv[1..]), then NULL.
	subs	x9, x19, #1
	csel	x9, xzr, x9, lo			// no ARGS when argc is 0
	add	x10, x9, #9
	sub	x10, sp, x10, lsl #3
	and	x10, x10, #-16
	mov	sp, x10
	str	x24, [sp]			// the loader
	adr	x11, opt_inhibit_cache
	str	x11, [sp, #8]			// --inhibit-cache: never read the image's /etc/ld.so.cache
	adr	x11, opt_library_path
	str	x11, [sp, #16]
	str	x25, [sp, #24]			// DIR/lib
	adr	x11, opt_argv0
	str	x11, [sp, #32]
	str	x22, [sp, #40]			// argv[0] of drainguard: this launcher
	str	x26, [sp, #48]			// DIR/lib/drainguard
	add	x12, sp, #56
	add	x13, x20, #8
1:	cbz	x9, 2f				// ARGS
	ldr	x11, [x13], #8
	str	x11, [x12], #8
	sub	x9, x9, #1
	b	1b
2:	str	xzr, [x12]

	bl	become_init			// returns in drainguard's process
	mov	x0, x24
	mov	x1, sp
	mov	x2, x21
	mov	x8, #SYS_execve
	svc	#0

	// Still here: execve failed, x0 = -errno.
	neg	x19, x0
	adr	x0, msg_exec
	bl	say
	mov	x0, x24
	bl	say
	adr	x0, msg_errno
	bl	say
	add	x0, x25, #32			// errno in decimal, written backwards into a scratch slot
	strb	wzr, [x0]
	mov	x2, #10
3:	udiv	x3, x19, x2
	msub	x4, x3, x2, x19
	add	w4, w4, #'0'
	sub	x0, x0, #1
	strb	w4, [x0]
	mov	x19, x3
	cbnz	x19, 3b
	bl	say
	adr	x0, msg_end
	bl	say
	b	fail

no_path:
	adr	x0, msg_no_path
	bl	say
fail:
	mov	x0, #EXIT_CANNOT_RUN
	mov	x8, #SYS_exit_group
	svc	#0

// become_init: as PID 1, or a child subreaper, forks; the parent is the init
// and never returns (launcher.S says what it does), the child (or this
// process, when fork fails) returns to exec drainguard.
become_init:
	mov	x8, #SYS_getpid
	svc	#0
	cmp	x0, #1
	b.eq	1f
	sub	sp, sp, #16
	str	xzr, [sp]
	mov	x0, #PR_GET_CHILD_SUBREAPER
	mov	x1, sp
	mov	x8, #SYS_prctl
	svc	#0
	ldr	w9, [sp]
	add	sp, sp, #16
	cbnz	x0, 9f				// an error (an old kernel) or not a subreaper: exec in place
	cbz	w9, 9f
1:	sub	sp, sp, #(16 + 128)		// [sp]: every signal, [sp + 8]: the mask before, [sp + 16]: siginfo, status
	mov	x9, #-1
	str	x9, [sp]
	mov	x0, #SIG_SETMASK		// blocked from before the fork: the init takes its signals with sigtimedwait
	mov	x1, sp
	add	x2, sp, #8
	mov	x3, #8
	mov	x8, #SYS_rt_sigprocmask
	svc	#0
	mov	x0, #SIGCHLD			// clone(SIGCHLD, 0, 0, 0, 0): fork
	mov	x1, #0
	mov	x2, #0
	mov	x3, #0
	mov	x4, #0
	mov	x8, #SYS_clone
	svc	#0
	cmp	x0, #0
	b.gt	init
	b.lt	2f
	// drainguard's process: in a process group of its own, the terminal's foreground
	// (if there is one), so a terminal's signals reach it once, not through the init too.
	mov	x0, #0
	mov	x1, #0
	mov	x8, #SYS_setpgid
	svc	#0
	mov	x8, #SYS_getpid
	svc	#0
	str	w0, [sp, #16]
	mov	x0, #0
	mov	x1, #TIOCSPGRP
	add	x2, sp, #16
	mov	x8, #SYS_ioctl
	svc	#0
2:	mov	x0, #SIG_SETMASK		// the signals as they were
	add	x1, sp, #8
	mov	x2, #0
	mov	x3, #8
	mov	x8, #SYS_rt_sigprocmask
	svc	#0
	add	sp, sp, #(16 + 128)
9:	ret

init:						// x0: drainguard's pid
	mov	x19, x0
	mov	x20, #(FORWARDED & 0xffff)
	movk	x20, #(FORWARDED >> 16), lsl #16
next_signal:
	mov	x0, sp
	add	x1, sp, #16
	mov	x2, #0				// no timeout
	mov	x3, #8
	mov	x8, #SYS_rt_sigtimedwait
	svc	#0
	cmp	x0, #0
	b.le	next_signal
	cmp	x0, #SIGCHLD
	b.eq	reap
	lsr	x9, x20, x0			// signal 64 (SIGRTMAX) shifts by 0: bit 0, clear
	tbz	x9, #0, next_signal
	mov	x1, x0
	mov	x0, x19
	mov	x8, #SYS_kill
	svc	#0
	b	next_signal
reap:
	mov	x0, #-1
	add	x1, sp, #16
	mov	x2, #WNOHANG
	mov	x3, #0
	mov	x8, #SYS_wait4
	svc	#0
	cmp	x0, #0
	b.le	next_signal			// none (left) that exited
	cmp	x0, x19
	b.ne	reap
	ldr	w0, [sp, #16]			// drainguard's wait status
	ands	w1, w0, #0x7f			// the signal that ended it, or 0
	b.eq	1f
	add	w0, w1, #128
	b	2f
1:	ubfx	w0, w0, #8, #8
2:	mov	x8, #SYS_exit_group
	svc	#0

// join: copies DIR (x22, x23 bytes) to x0, then the NUL-terminated suffix at x1.
join:
	mov	x2, #0
1:	cmp	x2, x23
	b.hs	2f
	ldrb	w3, [x22, x2]
	strb	w3, [x0, x2]
	add	x2, x2, #1
	b	1b
2:	add	x0, x0, x23
3:	ldrb	w3, [x1], #1
	strb	w3, [x0], #1
	cbnz	w3, 3b
	ret

// say: writes the NUL-terminated string at x0 to stderr.
say:
	mov	x1, x0
	mov	x2, #0
1:	ldrb	w3, [x1, x2]
	cbz	w3, 2f
	add	x2, x2, #1
	b	1b
2:	mov	x0, #2
	mov	x8, #SYS_write
	svc	#0
	ret

proc_self_exe:		.asciz "/proc/self/exe"
loader_suffix:		.asciz "/lib/ld-linux-aarch64.so.1"
lib_suffix:		.asciz "/lib"
program_suffix:		.asciz "/lib/drainguard"
opt_inhibit_cache:	.asciz "--inhibit-cache"
opt_library_path:	.asciz "--library-path"
opt_argv0:		.asciz "--argv0"
msg_exec:		.asciz "drainguard: cannot execute "
msg_errno:		.asciz " (errno "
msg_end:		.asciz "); is DIR/lib complete? Run 'drainguard install DIR' again.\n"
msg_no_path:		.asciz "drainguard: cannot find its own directory: /proc/self/exe is unreadable and argv[0] names no path\n"
end:
