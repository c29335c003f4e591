# The launcher that `drainguard install` writes as DIR/drainguard: a static
# x86-64 Linux executable of a few hundred bytes that needs no libc, no shell
# and no dynamic loader from the image it runs in. It replaces itself (execve,
# same process) with the dynamic loader that `install` put beside it:
#
#   DIR/lib/ld-linux-x86-64.so.2 --inhibit-cache --library-path DIR/lib
#       --argv0 DIR/drainguard DIR/lib/drainguard ARGS...
#
# so signals, the process id and the exit status are drainguard's own.
#
# Except as PID 1 (or a child subreaper), where every orphan of the container
# comes to this process and Node.js cannot wait for a process it did not
# start: there it stays, as the init that reaps them, runs drainguard as its
# child, passes signals on to it and exits with its status (become_init).
#
# DIR is the directory of this file: from /proc/self/exe, or from argv[0]
# when /proc is not mounted and argv[0] names a path. The ELF header is
# written out by hand so the output is this file's bytes and nothing else.
#
# Assembled by scripts/generate.ts (GNU as, objcopy -O binary) into
# src/install/launcher-image.ts; the drift test checks they agree.

	.intel_syntax noprefix
	.set	BASE, 0x400000
	.set	PATH_MAX, 4096
	.set	SLOT, PATH_MAX + 64		# DIR plus the longest suffix below
	.set	SYS_write, 1
	.set	SYS_rt_sigprocmask, 14
	.set	SYS_ioctl, 16
	.set	SYS_getpid, 39
	.set	SYS_fork, 57
	.set	SYS_execve, 59
	.set	SYS_wait4, 61
	.set	SYS_kill, 62
	.set	SYS_readlink, 89
	.set	SYS_setpgid, 109
	.set	SYS_rt_sigtimedwait, 128
	.set	SYS_prctl, 157
	.set	SYS_exit_group, 231
	.set	EXIT_CANNOT_RUN, 127
	.set	PR_GET_CHILD_SUBREAPER, 37
	.set	SIG_SETMASK, 2
	.set	SIGCHLD, 17
	.set	WNOHANG, 1
	.set	TIOCSPGRP, 0x5410
	# The signals the init passes on to drainguard, a bit per signal number:
	# 1-31 but SIGILL, SIGBUS, SIGFPE, SIGKILL, SIGSEGV, SIGPIPE, SIGCHLD and
	# SIGSTOP, the ones drainguard does not catch. The kernel drops a signal
	# that PID 1 has no handler for; drainguard as the init's child would die
	# of those, and of real-time signals.
	.set	FORWARDED, 0xfffffffe & ~(1<<4 | 1<<7 | 1<<8 | 1<<9 | 1<<11 | 1<<13 | 1<<17 | 1<<19)

	.text
ehdr:						# Elf64_Ehdr
	.byte	0x7f, 'E', 'L', 'F', 2, 1, 1, 0	# 64-bit, little-endian, version 1, System V
	.quad	0
	.word	2				# e_type: ET_EXEC
	.word	0x3e				# e_machine: x86-64
	.long	1				# e_version
	.quad	BASE + _start - ehdr		# e_entry
	.quad	phdrs - ehdr			# e_phoff
	.quad	0				# e_shoff: no sections
	.long	0				# e_flags
	.word	64				# e_ehsize
	.word	56				# e_phentsize
	.word	2				# e_phnum
	.word	0, 0, 0				# e_shentsize, e_shnum, e_shstrndx
phdrs:						# Elf64_Phdr: the whole file, read and execute
	.long	1				# PT_LOAD
	.long	5				# PF_R | PF_X
	.quad	0				# p_offset
	.quad	BASE				# p_vaddr
	.quad	BASE				# p_paddr
	.quad	end - ehdr			# p_filesz
	.quad	end - ehdr			# p_memsz
	.quad	0x1000				# p_align
						# a stack that is not executable
	.long	0x6474e551			# PT_GNU_STACK
	.long	6				# PF_R | PF_W
	.quad	0, 0, 0, 0, 0
	.quad	16

_start:
	mov	r12, [rsp]			# r12: argc
	lea	r13, [rsp + 8]			# r13: argv
	lea	r14, [r13 + r12*8 + 8]		# r14: envp
	sub	rsp, PATH_MAX + 3*SLOT
	mov	rbx, rsp			# rbx: own path, then three paths built from its directory

	# Own path: the kernel's link, else argv[0] when it names a path.
	mov	eax, SYS_readlink
	lea	rdi, [rip + proc_self_exe]
	mov	rsi, rbx
	mov	edx, PATH_MAX - 1
	syscall
	test	rax, rax
	jg	have_path
	mov	rsi, [r13]			# argv[0]; NULL when argc is 0
	test	rsi, rsi
	jz	no_path
	xor	eax, eax
copy_argv0:
	mov	cl, [rsi + rax]
	mov	[rbx + rax], cl
	test	cl, cl
	jz	have_path
	inc	rax
	cmp	rax, PATH_MAX - 1
	jb	copy_argv0
	jmp	no_path
have_path:					# rax: length of the path
	cmp	rax, PATH_MAX - 1		# a full buffer may hold a truncated path
	jae	no_path
	mov	byte ptr [rbx + rax], 0
	mov	r15, rax
find_slash:					# r15: index of the last '/', the length of DIR
	dec	r15
	js	no_path
	cmp	byte ptr [rbx + r15], '/'
	jne	find_slash

	lea	rdi, [rbx + PATH_MAX]
	lea	rsi, [rip + loader_suffix]
	call	join
	lea	rdi, [rbx + PATH_MAX + SLOT]
	lea	rsi, [rip + lib_suffix]
	call	join
	lea	rdi, [rbx + PATH_MAX + 2*SLOT]
	lea	rsi, [rip + program_suffix]
	call	join

	# The loader's argv: 8 fixed entries, then ARGS (argv[1..]), then NULL.
	lea	rcx, [r12 - 1]
	test	r12, r12
	jnz	1f
	xor	ecx, ecx
1:	lea	rax, [rcx*8 + 9*8]
	sub	rsp, rax
	and	rsp, -16
	lea	rax, [rbx + PATH_MAX]
	mov	[rsp], rax			# the loader
	lea	rax, [rip + opt_inhibit_cache]
	mov	[rsp + 8], rax			# --inhibit-cache: never read the image's /etc/ld.so.cache
	lea	rax, [rip + opt_library_path]
	mov	[rsp + 16], rax
	lea	rax, [rbx + PATH_MAX + SLOT]
	mov	[rsp + 24], rax			# DIR/lib
	lea	rax, [rip + opt_argv0]
	mov	[rsp + 32], rax
	mov	[rsp + 40], rbx			# argv[0] of drainguard: this launcher
	lea	rax, [rbx + PATH_MAX + 2*SLOT]
	mov	[rsp + 48], rax			# DIR/lib/drainguard
	lea	rsi, [r13 + 8]
	lea	rdi, [rsp + 56]
	rep movsq				# ARGS
	mov	qword ptr [rdi], 0

	call	become_init			# returns in drainguard's process
	mov	eax, SYS_execve
	lea	rdi, [rbx + PATH_MAX]
	mov	rsi, rsp
	mov	rdx, r14
	syscall

	# Still here: execve failed, rax = -errno.
	neg	rax
	mov	r12, rax
	lea	rsi, [rip + msg_exec]
	call	say
	lea	rsi, [rbx + PATH_MAX]
	call	say
	lea	rsi, [rip + msg_errno]
	call	say
	mov	rax, r12			# errno in decimal, written backwards into a scratch slot
	lea	rsi, [rbx + PATH_MAX + SLOT + 32]
	mov	byte ptr [rsi], 0
	mov	ecx, 10
2:	xor	edx, edx
	div	rcx
	add	dl, '0'
	dec	rsi
	mov	[rsi], dl
	test	rax, rax
	jnz	2b
	call	say
	lea	rsi, [rip + msg_end]
	call	say
	jmp	fail

no_path:
	lea	rsi, [rip + msg_no_path]
	call	say
fail:
	mov	edi, EXIT_CANNOT_RUN
	mov	eax, SYS_exit_group
	syscall

# become_init: as PID 1, or a child subreaper, forks; the parent never returns
# from here, the child (or this process, when fork fails) returns to exec
# drainguard. The parent is the init: it passes the signals it is sent on to
# drainguard, reaps every child that exits, and when drainguard is the one,
# exits with drainguard's status (128+N for signal N, as it cannot die of one
# as PID 1). It never waits for the operator, which is drainguard's child,
# not its own: libuv, in drainguard, waits for that one.
become_init:
	mov	eax, SYS_getpid
	syscall
	cmp	eax, 1
	je	1f
	push	0
	mov	eax, SYS_prctl
	mov	edi, PR_GET_CHILD_SUBREAPER
	mov	rsi, rsp
	syscall
	pop	rcx
	test	eax, eax			# an error (an old kernel) or not a subreaper: exec in place
	jnz	9f
	test	ecx, ecx
	jz	9f
1:	sub	rsp, 16 + 128			# [rsp]: every signal, [rsp + 8]: the mask before, [rsp + 16]: siginfo, status
	mov	qword ptr [rsp], -1
	mov	eax, SYS_rt_sigprocmask		# blocked from before the fork: the init takes its signals with sigtimedwait
	mov	edi, SIG_SETMASK
	mov	rsi, rsp
	lea	rdx, [rsp + 8]
	mov	r10d, 8
	syscall
	mov	eax, SYS_fork
	syscall
	test	rax, rax
	jg	init
	jl	2f
	# drainguard's process: in a process group of its own, the terminal's foreground
	# (if there is one), so a terminal's signals reach it once, not through the init too.
	mov	eax, SYS_setpgid
	xor	edi, edi
	xor	esi, esi
	syscall
	mov	eax, SYS_getpid
	syscall
	mov	[rsp + 16], eax
	mov	eax, SYS_ioctl
	xor	edi, edi
	mov	esi, TIOCSPGRP
	lea	rdx, [rsp + 16]
	syscall
2:	mov	eax, SYS_rt_sigprocmask		# the signals as they were
	mov	edi, SIG_SETMASK
	lea	rsi, [rsp + 8]
	xor	edx, edx
	mov	r10d, 8
	syscall
	add	rsp, 16 + 128
9:	ret

init:						# rax: drainguard's pid
	mov	r12, rax
next_signal:
	mov	eax, SYS_rt_sigtimedwait
	mov	rdi, rsp
	lea	rsi, [rsp + 16]
	xor	edx, edx			# no timeout
	mov	r10d, 8
	syscall
	test	rax, rax
	jle	next_signal
	cmp	eax, SIGCHLD
	je	reap
	mov	rcx, FORWARDED
	bt	rcx, rax			# bit 64 (SIGRTMAX) is bit 0: clear
	jnc	next_signal
	mov	esi, eax
	mov	edi, r12d
	mov	eax, SYS_kill
	syscall
	jmp	next_signal
reap:
	mov	eax, SYS_wait4
	mov	rdi, -1
	lea	rsi, [rsp + 16]
	mov	edx, WNOHANG
	xor	r10d, r10d
	syscall
	test	rax, rax
	jle	next_signal			# none (left) that exited
	cmp	rax, r12
	jne	reap
	mov	edi, [rsp + 16]			# drainguard's wait status
	mov	eax, edi
	and	eax, 0x7f			# the signal that ended it, or 0
	jz	1f
	lea	edi, [rax + 128]
	jmp	2f
1:	shr	edi, 8
	and	edi, 0xff
2:	mov	eax, SYS_exit_group
	syscall

# join: copies DIR (rbx, r15 bytes) to rdi, then the NUL-terminated suffix at rsi.
join:
	push	rsi
	mov	rsi, rbx
	mov	rcx, r15
	rep movsb
	pop	rsi
1:	lodsb
	stosb
	test	al, al
	jnz	1b
	ret

# say: writes the NUL-terminated string at rsi to stderr.
say:
	xor	edx, edx
1:	cmp	byte ptr [rsi + rdx], 0
	je	2f
	inc	rdx
	jmp	1b
2:	mov	eax, SYS_write
	mov	edi, 2
	syscall
	ret

proc_self_exe:		.asciz "/proc/self/exe"
loader_suffix:		.asciz "/lib/ld-linux-x86-64.so.2"
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
