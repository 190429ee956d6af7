from oss.cli import main

main()
