from gq.cli.entry import main

main()
