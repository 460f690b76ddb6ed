from mhaudit.cli import main

main()
