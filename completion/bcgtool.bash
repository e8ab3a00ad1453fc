# bcgtool.bash - bash completion for bcgtool: commands, options, file names.
#
# Commands and options are read from the program itself (`bcgtool --help`,
# `bcgtool COMMAND --help`), so they never drift from it; the answers are
# kept for the rest of the shell's life. Scripts complete as *.yaml and
# *.yml, plans as *.plan.

# The options of command $1, one per line, from its --help.
_bcgtool_options()
{
	local cmd=$1 var
	var="_bcgtool_opts_${cmd//[^a-z]/_}"
	if [[ -z ${!var+set} ]]; then
		printf -v "$var" '%s' "$("${_bcgtool_prog:-bcgtool}" "$cmd" --help 2>/dev/null |
			sed -n -e 's/^ *\(-[a-zA-Z0-9]\), \(--[a-z][a-z-]*\).*/\1\n\2/p' \
			       -e 's/^ *\(--[a-z][a-z-]*\).*/\1/p')"
	fi
	printf '%s\n' "${!var}"
}

# The commands, from bcgtool --help.
_bcgtool_commands()
{
	if [[ -z ${_bcgtool_cmds+set} ]]; then
		_bcgtool_cmds=$("${_bcgtool_prog:-bcgtool}" --help 2>/dev/null |
			sed -n -e '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p')
	fi
	printf '%s\n' "$_bcgtool_cmds"
}

# Complete directories, and file names matching one of the patterns.
_bcgtool_files()
{
	local cur=$1 pattern
	local IFS=$'\n'
	shift
	compopt -o filenames 2>/dev/null
	COMPREPLY+=($(compgen -d -- "$cur"))
	for pattern; do
		COMPREPLY+=($(compgen -f -X "!$pattern" -- "$cur"))
	done
}

_bcgtool()
{
	local cur prev cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	_bcgtool_prog=${COMP_WORDS[0]}
	COMPREPLY=()

	# The command: the first word after the program that is not an option.
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} != -* ]]; then
			cmd=${COMP_WORDS[i]}
			break
		fi
	done
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_bcgtool_commands) help" -- "$cur"))
		fi
		return 0
	fi
	if [[ $cmd == help ]]; then
		COMPREPLY=($(compgen -W "$(_bcgtool_commands)" -- "$cur"))
		return 0
	fi

	# The argument of the option before.
	case $prev in
	-b|--backend)
		COMPREPLY=($(compgen -W 'auto host cuda' -- "$cur"))
		return 0 ;;
	-m|--mode)
		if [[ $cmd == capture ]]; then
			COMPREPLY=($(compgen -W 'breakable full eager full_and_breakable' -- "$cur"))
		else
			COMPREPLY=($(compgen -W 'breakable full eager' -- "$cur"))
		fi
		return 0 ;;
	--verify)
		COMPREPLY=($(compgen -W 'all first-and-largest none' -- "$cur"))
		return 0 ;;
	--color)
		COMPREPLY=($(compgen -W 'auto always never' -- "$cur"))
		return 0 ;;
	-o|--output)
		if [[ $cmd == profile ]]; then
			_bcgtool_files "$cur" '*.nsys-rep'
		else
			_bcgtool_files "$cur" '*.plan'
		fi
		return 0 ;;
	--svg)
		_bcgtool_files "$cur" '*.svg'
		return 0 ;;
	--trace-json)
		_bcgtool_files "$cur" '*.json'
		return 0 ;;
	--policy)
		COMPREPLY=($(compgen -W 'full_and_breakable breakable full eager' -- "$cur"))
		return 0 ;;
	--trace)
		_bcgtool_files "$cur" '*.jsonl'
		return 0 ;;
	-t|--tokens|-v|--variant|-n|--steps|-w|--warmup|--top|--step|--synthetic|--sched|--tp|--timeout)
		return 0 ;;
	esac

	# record: after "--", the program to run and its own arguments.
	if [[ $cmd == record ]]; then
		for ((i = 1; i < COMP_CWORD; i++)); do
			if [[ ${COMP_WORDS[i]} == -- ]]; then
				if ((i == COMP_CWORD - 1)); then
					COMPREPLY=($(compgen -c -- "$cur"))
				else
					compopt -o default 2>/dev/null
				fi
				return 0
			fi
		done
	fi

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_bcgtool_options "$cmd")" -- "$cur"))
		return 0
	fi
	case $cmd in
	capture|run|bench|validate)
		_bcgtool_files "$cur" '*.yaml' '*.yml' ;;
	inspect|diff|instantiate|replay|profile)
		_bcgtool_files "$cur" '*.plan' ;;
	import)
		COMPREPLY=($(compgen -d -- "$cur")) ;;
	report)
		_bcgtool_files "$cur" '*.sqlite' '*.nsys-rep' '*.plan' ;;
	esac
	return 0
}

complete -F _bcgtool bcgtool
