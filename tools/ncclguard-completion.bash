# bash completion for ncclguard(1); `make install` puts it where
# bash-completion loads it (PREFIX/share/bash-completion/completions), or
# source it from ~/.bashrc.
#
# The subcommands and each one's options are read from the command's own
# `--help` (once per shell and command), so they cannot drift from it:
# the subcommands from the list `ncclguard --help` prints, the options
# from each usage line and option line of `ncclguard SUB --help`, and
# what an option takes from the word after it there (DIR, FILE, URL...).
# Only the values of two options are listed here; tests/tools/
# test_completion.sh checks them against --help.

declare -gA _NCCLGUARD_OPTS _NCCLGUARD_ARG _NCCLGUARD_SUBS
declare -gA _NCCLGUARD_VALUES=(
	[--on-timeout]="warn abort exit"
	[--fail-on]="hang mismatch policy straggler config incomplete hardware data any"
)

# _ncclguard_load CMD SUB: reads `CMD SUB --help` into the tables (SUB ""
# for CMD itself: its subcommands); 1 if CMD gave no help.
_ncclguard_load()
{
	local cmd=$1 sub=$2 key="$1|$2" line usage=0 rest opt meta
	local opt_line='^ {2,6}((-[a-zA-Z]), +)?(--[a-z][a-z0-9-]*|-[a-zA-Z])( ([A-Z][A-Za-z0-9_:.|]*))?'
	local use_opt='(^|[[ |])(--?[a-zA-Z][a-z0-9-]*)( ([A-Z][A-Za-z0-9_:.|]*))?'
	local subs='' opts=' '

	[[ -n ${_NCCLGUARD_OPTS[$key]+set} ]] && return 0
	while IFS= read -r line; do
		[[ $line == usage:* ]] && usage=1
		[[ -z $line ]] && usage=0
		if [[ -z $sub ]]; then
			# "  run      record a job...": a subcommand
			[[ $line =~ ^\ \ ([a-z]+)\ \  ]] && subs+="${BASH_REMATCH[1]} "
			continue
		fi
		if ((usage)); then
			# "ncclguard policy check FILE": a word of the subcommand's own
			[[ $line =~ ncclguard\ $sub\ ([a-z]+)( |$) ]] &&
				_NCCLGUARD_SUBS[$key]+="${BASH_REMATCH[1]} "
			rest=$line
			while [[ $rest =~ $use_opt ]]; do
				opt=${BASH_REMATCH[2]} meta=${BASH_REMATCH[4]}
				[[ $opts == *" $opt "* ]] || opts+="$opt "
				[[ -n $meta ]] && _NCCLGUARD_ARG["$key $opt"]=$meta
				rest=${rest#*"${BASH_REMATCH[0]}"}
			done
		elif [[ $line =~ $opt_line ]]; then
			meta=${BASH_REMATCH[5]}
			for opt in ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}; do
				[[ $opts == *" $opt "* ]] || opts+="$opt "
				[[ -n $meta ]] && _NCCLGUARD_ARG["$key $opt"]=$meta
			done
		fi
	done < <("$cmd" $sub --help 2>/dev/null)
	if [[ -z $sub ]]; then
		[[ -n $subs ]] || return 1
		_NCCLGUARD_SUBS[$key]=$subs
		opts=' --help --version '
	else
		[[ $opts == *" --help "* ]] || opts+="--help "
	fi
	_NCCLGUARD_OPTS[$key]=$opts
	return 0
}

# _ncclguard_words LIST CUR: the words of LIST that start with CUR.
_ncclguard_words()
{
	mapfile -t COMPREPLY < <(compgen -W "$1" -- "$2")
}

_ncclguard_files()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen "$1" -- "$2")
}

# _ncclguard_value OPT META CUR: what OPT takes, by the word its help
# gives it.
_ncclguard_value()
{
	local opt=$1 meta=$2 cur=$3 pre=''

	if [[ -n ${_NCCLGUARD_VALUES[$opt]} ]]; then
		# --fail-on hang,mis: the last of a comma-separated list
		if [[ $cur == *,* ]]; then
			pre=${cur%,*},
			cur=${cur##*,}
		fi
		mapfile -t COMPREPLY < <(compgen -P "$pre" -W "${_NCCLGUARD_VALUES[$opt]}" -- "$cur")
		compopt -o nospace 2>/dev/null
		return
	fi
	case $meta in
	DIR) _ncclguard_files -d "$cur" ;;
	*FILE*) _ncclguard_files -f "$cur" ;;
	URL) _ncclguard_words "net://" "$cur"; compopt -o nospace 2>/dev/null ;;
	*) COMPREPLY=() ;;	# a number, a name: nothing to offer
	esac
}

_ncclguard()
{
	local cmd=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev='' sub key meta i

	COMPREPLY=()
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	_ncclguard_load "$cmd" "" || return 0
	if ((COMP_CWORD == 1)); then
		if [[ $cur == -* ]]; then
			_ncclguard_words "${_NCCLGUARD_OPTS[$cmd|]}" "$cur"
		else
			_ncclguard_words "${_NCCLGUARD_SUBS[$cmd|]}" "$cur"
		fi
		return 0
	fi
	sub=${COMP_WORDS[1]}
	[[ " ${_NCCLGUARD_SUBS[$cmd|]} " == *" $sub "* ]] || return 0
	key="$cmd|$sub"
	# run -- CMD ARGS: the command, then its arguments
	if [[ $sub == run ]]; then
		for ((i = 2; i < COMP_CWORD; i++)); do
			[[ ${COMP_WORDS[i]} == -- ]] || continue
			if ((i == COMP_CWORD - 1)); then
				_ncclguard_files -c "$cur"
			else
				_ncclguard_files -f "$cur"
			fi
			return 0
		done
	fi
	_ncclguard_load "$cmd" "$sub" || return 0
	meta=${_NCCLGUARD_ARG["$key $prev"]}
	if [[ -n $meta ]]; then
		_ncclguard_value "$prev" "$meta" "$cur"
		return 0
	fi
	if [[ $cur == -* ]]; then
		_ncclguard_words "${_NCCLGUARD_OPTS[$key]}" "$cur"
		return 0
	fi
	# the words after the subcommand that are not options
	if ((COMP_CWORD == 2)) && [[ -n ${_NCCLGUARD_SUBS[$key]} ]]; then
		_ncclguard_words "${_NCCLGUARD_SUBS[$key]}" "$cur"
		return 0
	fi
	case $sub in
	analyze) _ncclguard_files -d "$cur" ;;
	watch) _ncclguard_words "net://" "$cur"; compopt -o nospace 2>/dev/null ;;
	policy|doctor) _ncclguard_files -f "$cur" ;;
	esac
	return 0
}

complete -F _ncclguard ncclguard
