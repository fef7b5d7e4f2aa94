"""Stand-ins for what msgspool talks to: the providers' HTTP APIs
(standin.py: twilio.py, whatsapp.py and hook.py on server.py), an SMPP
SMSC (smsc.py, on smpp_pdu.py) and an SMTP sink (smtp.py)."""
